package run

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/kestrel-lm/kestrel/internal/datasrc"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/monitor"
)

// The loader is the trainer's data source for prepared datasets.
var _ datasrc.Source = (*loader.Loader)(nil)

// The loader's optional extras the trainer uses: Close (Run closes the
// prefetcher) and DescribeStep (datasrc.DescribeBatch, for spike reports).
var (
	_ io.Closer              = (*loader.Loader)(nil)
	_ datasrc.BatchDescriber = (*loader.Loader)(nil)
)

// OpenLoader opens a prepared dataset (data.kind = "dataset") as the
// trainer's data source: the [data] mixture over the dataset's sources,
// sequences of model.seq_len, the train batch schedule and run.seed. The
// loader also has Stats() (stall time, source shares, pad fraction),
// BatchInfo(index)/DescribeStep(index) and Close(); train.Run closes it.
func OpenLoader(cfg config.Config, log *slog.Logger) (*loader.Loader, error) {
	if cfg.Data.Path == "" {
		return nil, fmt.Errorf("data.kind = \"dataset\" needs data.path (a directory written by kestrel prepare)")
	}
	ds, vocab, err := loader.Open(cfg.Data.Path)
	if err != nil {
		return nil, err
	}
	if vocab > cfg.Model.Vocab {
		return nil, fmt.Errorf("dataset %s: its tokenizer has %d tokens but model.vocab is %d (set model.vocab = %d)", cfg.Data.Path, vocab, cfg.Model.Vocab, vocab)
	}
	if log == nil {
		log = slog.Default()
	}
	l, err := NewLoader(ds, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", cfg.Data.Path, err)
	}
	return l, nil
}

// NewLoader builds the loader over ds as kestrel train runs it, on the
// batch schedule the trainer runs (the loader numbers sequences
// cumulatively over it; a mismatch is an error in Fill). Step numbering
// (see package batchsched): train.batch_schedule and data.stages[].start_step
// are metrics steps (ReportBase 1), so an entry [S, B] and a stage with
// start_step S both first show in the metrics.jsonl line "step": S.
func NewLoader(ds *loader.Dataset, cfg config.Config, log *slog.Logger) (*loader.Loader, error) {
	sched, err := batchsched.FromConfig("train.batch_schedule", cfg.Train.BatchSchedule, cfg.Train.BatchSize)
	if err != nil {
		return nil, err
	}
	return loader.New(ds, cfg.Data, loader.Options{
		SeqLen:     cfg.Model.SeqLen,
		Seed:       cfg.Run.Seed,
		Schedule:   sched,
		ReportBase: 1, // metrics.jsonl "step" of Fill's index 0
		TotalSteps: cfg.Train.Steps,
		Logger:     log,
	})
}

// LoaderBatches returns a function naming the sources and documents of the
// batch of a metrics step (1-based), for the monitor's incident bundles and
// spike verdicts; it reads no tokens.
func LoaderBatches(l *loader.Loader) func(step int) *monitor.Batch {
	return func(step int) *monitor.Batch {
		info, err := l.BatchInfo(step - 1)
		if err != nil {
			return nil
		}
		b := &monitor.Batch{}
		for _, r := range info.Rows {
			b.Sources = append(b.Sources, r.Source)
			b.IDs = append(b.IDs, fmt.Sprintf("%s/seq%d", r.Source, r.Seq))
			for _, d := range r.Docs {
				id := d.ID
				if id == "" {
					id = fmt.Sprintf("%s#%d", r.Source, d.Doc)
				}
				b.DocIDs = append(b.DocIDs, id)
			}
		}
		return b
	}
}
