package rpc

import (
	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// RefToPB converts a region ref; the zero Ref becomes nil.
func RefToPB(r region.Ref) *pb.Ref {
	if r == (region.Ref{}) {
		return nil
	}
	return &pb.Ref{Region: r.Region, Offset: r.Offset, Length: r.Length}
}

// RefFromPB converts a region ref; nil becomes the zero Ref.
func RefFromPB(r *pb.Ref) region.Ref {
	return region.Ref{Region: r.GetRegion(), Offset: r.GetOffset(), Length: r.GetLength()}
}

// SetupToPB converts a plugin's setup.
func SetupToPB(s plugin.Setup) *pb.Setup {
	out := &pb.Setup{
		RunId:         s.RunID,
		Seed:          s.Seed,
		BatchSize:     int64(s.BatchSize),
		Lookups:       int64(s.Lookups),
		DenseFeatures: int64(s.DenseFeatures),
		Options:       []byte(s.Options),
	}
	if s.Tables != nil {
		out.Tables = make([]*pb.Table, len(s.Tables))
		for i, t := range s.Tables {
			out.Tables[i] = &pb.Table{Rows: t.Rows, Dim: int64(t.Dim)}
		}
	}
	return out
}

// SetupFromPB converts a plugin's setup.
func SetupFromPB(s *pb.Setup) plugin.Setup {
	out := plugin.Setup{
		RunID:         s.GetRunId(),
		Seed:          s.GetSeed(),
		BatchSize:     int(s.GetBatchSize()),
		Lookups:       int(s.GetLookups()),
		DenseFeatures: int(s.GetDenseFeatures()),
	}
	if len(s.GetOptions()) > 0 {
		out.Options = append([]byte(nil), s.GetOptions()...)
	}
	if s.GetTables() != nil {
		out.Tables = make([]plugin.Table, len(s.GetTables()))
		for i, t := range s.GetTables() {
			out.Tables[i] = plugin.Table{Rows: t.GetRows(), Dim: int(t.GetDim())}
		}
	}
	return out
}

// InfoToPB converts a plugin's self-description.
func InfoToPB(info plugin.Info) *pb.PluginInfo {
	out := &pb.PluginInfo{
		Kind:        string(info.Kind),
		Name:        info.Name,
		Version:     info.Version,
		ApiVersion:  int64(info.APIVersion),
		Description: info.Description,
		Ops:         info.Ops,
	}
	for _, f := range info.Config {
		out.Config = append(out.Config, &pb.Field{
			Name:        f.Name,
			Type:        f.Type,
			Default:     f.Default,
			Description: f.Description,
		})
	}
	return out
}

// InfoFromPB converts a plugin's self-description.
func InfoFromPB(info *pb.PluginInfo) plugin.Info {
	out := plugin.Info{
		Kind:        plugin.Kind(info.GetKind()),
		Name:        info.GetName(),
		Version:     info.GetVersion(),
		APIVersion:  int(info.GetApiVersion()),
		Description: info.GetDescription(),
		Ops:         info.GetOps(),
	}
	for _, f := range info.GetConfig() {
		out.Config = append(out.Config, plugin.Field{
			Name:        f.GetName(),
			Type:        f.GetType(),
			Default:     f.GetDefault(),
			Description: f.GetDescription(),
		})
	}
	return out
}

// CompleteInfo fills the fields of info a plugin may leave zero because the
// SDK knows them: the kind it is served as and the API version.
func CompleteInfo(info plugin.Info, kind plugin.Kind) plugin.Info {
	if info.Kind == "" {
		info.Kind = kind
	}
	if info.APIVersion == 0 {
		info.APIVersion = plugin.APIVersion
	}
	return info
}
