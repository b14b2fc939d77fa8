package run

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// ReplaySource is a finished run's training inputs rebuilt read-only for
// kestrel replay (internal/replay): its config.toml with the config
// overrides of its effective interventions (as every start applies them),
// and the trainer's options from it (the data source as training built it).
// Close releases the data.
type ReplaySource struct {
	// Interventions are the run's effective interventions.
	Interventions []runlog.Intervention
	// Loader is the dataset loader (nil for byte-level data).
	Loader *loader.Loader
	// SeqLen is the model's sequence length.
	SeqLen int
	// Tokenizer is the tokenizer file the manifest records ("bytes" or "" for byte-level data).
	Tokenizer string
	// QuarantineHash is the hash of the quarantine overlay the batches are rebuilt with.
	QuarantineHash string
	dir            string
	cfg            config.Config
	to             train.Options
}

// OpenReplaySource reads the run directory dir's config.toml
// (data.quarantine replaced by quarantine when not empty) and applies its
// interventions; Build then opens the data.
func OpenReplaySource(dir, quarantine string) (*ReplaySource, error) {
	cfg, err := config.Load(rundir.Of(dir).Config(), nil)
	if err != nil {
		return nil, err
	}
	if quarantine != "" {
		cfg.Data.Quarantine = quarantine
	}
	cfg, ivs, err := ApplyInterventions(cfg, dir)
	if err != nil {
		return nil, err
	}
	return &ReplaySource{Interventions: ivs, dir: dir, cfg: cfg}, nil
}

// Build makes the trainer's options from the config (TrainOptions: the
// data source as training built it). Its errors name the config file.
func (r *ReplaySource) Build(log *slog.Logger) error {
	to, err := TrainOptions(r.cfg, r.dir, log)
	if err != nil {
		return fmt.Errorf("%s: %w", rundir.Of(r.dir).Config(), err)
	}
	r.to = to
	r.Loader, _ = to.Data.(*loader.Loader)
	r.SeqLen, r.Tokenizer, r.QuarantineHash = to.Model.SeqLen, to.Manifest.Tokenizer, to.Manifest.QuarantineHash
	return nil
}

// Replayer replays the run's steps and probe on the checkpoint ck
// (train.NewReplayer), following its interventions as the trainer does.
func (r *ReplaySource) Replayer(ck string) (*train.Replayer, error) {
	return train.NewReplayer(r.to, ck)
}

// Close releases the data source.
func (r *ReplaySource) Close() error {
	if c, ok := r.to.Data.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
