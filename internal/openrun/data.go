package openrun

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/rundir"
)

// Data is where a run's training and held-out documents come from: the
// prepared dataset, or the byte-level train and validation text.
type Data struct {
	Dataset    *shards.Dataset // nil for byte-level data
	Train, Val []byte          // byte-level data only
}

// Close closes the dataset (a no-op for byte-level data).
func (d *Data) Close() {
	if d.Dataset != nil {
		d.Dataset.Close()
	}
}

// OpenData opens the data of the run directory run as its checkpoint state
// st describes it: the dataset named by state.json's tokenizer, or for
// byte-level runs the run's config.toml data.train / data.val (or the last
// train.val_fraction of data.train), split by datasrc.OpenBytes as the run
// was.
func OpenData(run string, st checkpoint.State) (*Data, error) {
	if !st.ByteLevel() {
		dir, err := st.DatasetDir()
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", run, err)
		}
		ds, err := shards.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", run, err)
		}
		return &Data{Dataset: ds}, nil
	}
	cp := rundir.Of(run).Config()
	cfg, err := ReadConfig(cp)
	if err == nil {
		cfg, err = cfg.Resolved()
	}
	if err != nil {
		return nil, fmt.Errorf("run %s (byte-level): %w", run, err)
	}
	tp, vp := cfg.Data.Train, cfg.Data.Val
	// The same split as the run trained on.
	src, err := datasrc.OpenBytes(tp, vp, cfg.Train.ValFraction, cfg.Model.SeqLen, cfg.Run.Seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cp, err)
	}
	tr, va := src.Text()
	return &Data{Train: tr, Val: va}, nil
}
