package main

import (
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// openDatasetSource opens a prepared dataset (data.kind = "dataset") as the
// trainer's data source. The loader issue fills it in.
func openDatasetSource(cfg config.Config) (train.DataSource, error) {
	return nil, errNotImplemented("data.kind = \"dataset\"")
}
