package exchange

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the exchange stage's kind.
const Kind stage.Kind = "exchange"

// BytesToDevice and BytesToHost are the bytes of the rows moved towards the
// device and of the victims moved back, for exchange's span.
var BytesToDevice, BytesToHost = batch.NewStat("bytes_to_device"), batch.NewStat("bytes_to_host")

// NewFactory returns the exchange stage's factory. Exchange reads the
// plan's counts; collect's staged rows (batch.CollectedRows) replace the
// misses when a collect stage is upstream, which is optional.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Device: "gpu"}, create,
		stage.WithFields([]batch.Field{BytesToDevice, BytesToHost}, []batch.Field{batch.Misses, batch.VictimCount}))
}
