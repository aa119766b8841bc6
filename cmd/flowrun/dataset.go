package main

import (
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/results"
)

// datasetUse says how a run of d uses its batch file, for results.json and
// the summary; nil for generated data.
func datasetUse(d config.Dataset) (*results.DatasetUse, error) {
	if d.Kind != "file" {
		return nil, nil
	}
	n, epochs, err := data.Epochs(d)
	if err != nil {
		return nil, err
	}
	return &results.DatasetUse{Path: d.Path, FileBatches: int(n), Epochs: epochs}, nil
}
