// Package openrun is the one way a consumer reads a finished (or stopped)
// run: its config.toml decoded into the sections a reader needs, its
// manifest, a checkpoint by name and that checkpoint's model. eval,
// generate, hfrun and replay read runs through it (or, below it, through
// internal/checkpoint), so none of them imports the trainer or the config
// system. File names come from internal/rundir.
package openrun

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/samples"
	"github.com/kestrel-lm/kestrel/internal/tomlstrict"
)

// RunSection is the [run] section as a reader sees it.
type RunSection struct {
	Name string `toml:"name"`
	Seed uint64 `toml:"seed"`
}

// TrainSection is the part of the [train] section a reader needs: how a
// byte-level run split its text.
type TrainSection struct {
	ValFraction float64 `toml:"val_fraction"`
}

// Config is a run's config.toml as its readers see it: the sections they
// use, each typed by the package that owns it (internal/config aggregates
// the same types). Sections it does not model are skipped; a key the
// modelled sections lack is an error naming the file and line, as
// config.Load's.
type Config struct {
	Run     RunSection     `toml:"run"`
	Model   model.Config   `toml:"model"`
	Train   TrainSection   `toml:"train"`
	Data    loader.Config  `toml:"data"`
	Eval    evalcfg.Config `toml:"eval"`
	Samples samples.Config `toml:"samples"`
}

// strictSections are the sections Config models whole.
var strictSections = []string{"run", "model", "data", "eval", "samples"}

// DefaultConfig returns the defaults of the sections Config holds, the
// same as config.Default's (a test holds them equal).
func DefaultConfig() Config {
	return Config{
		Run:     RunSection{Name: "run", Seed: 1337},
		Model:   model.DefaultConfig(),
		Train:   TrainSection{ValFraction: 0.1},
		Data:    loader.DefaultConfig(),
		Eval:    evalcfg.Default(),
		Samples: samples.DefaultConfig(),
	}
}

// ReadConfig reads the config file at path (a run's config.toml) over the
// defaults: a regular file only, at most tomlstrict.MaxBytes. A missing
// file is an error os.IsNotExist recognises.
func ReadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	data, err := fileguard.ReadFile(path, tomlstrict.MaxBytes) // its errors name the path
	if err != nil {
		return cfg, err
	}
	err = tomlstrict.DecodeFiltered(data, path, &cfg, func(key []string) bool {
		return len(key) > 0 && slices.Contains(strictSections, key[0])
	})
	return cfg, err
}

// Resolved returns c with ${KESTREL_DATA} expanded in its paths
// (datadir.Resolve): the one place a finished run's config.toml paths are
// resolved, for the readers that open its files (OpenData, eval's
// coverage and held-out sets). c, as read, keeps them as the run wrote
// them (the model card shows them so). The error names the key.
func (c Config) Resolved() (Config, error) {
	if err := datadir.Resolve(&c); err != nil {
		return Config{}, fmt.Errorf("config.toml: %w", err)
	}
	return c, nil
}

// Run is a run directory opened for reading.
type Run struct {
	Layout rundir.Layout
	Config Config
}

// Open reads the run directory dir's config.toml.
func Open(dir string) (*Run, error) {
	l := rundir.Of(dir)
	cfg, err := ReadConfig(l.Config())
	if err != nil {
		return nil, err
	}
	return &Run{Layout: l, Config: cfg}, nil
}

// Manifest reads the run's manifest.json.
func (r *Run) Manifest() (*runlog.Manifest, error) { return runlog.ReadManifest(r.Layout.Dir) }

// Checkpoint resolves a checkpoint name (last, last-good, step-N, N or a
// directory) to its directory (checkpoint.Resolve).
func (r *Run) Checkpoint(name string) (string, error) {
	return checkpoint.Resolve(r.Layout.Dir, name)
}

// Model loads the model of the checkpoint named name ("" = the newest
// that verifies), its EMA weights when ema is set.
func (r *Run) Model(name string, ema bool, log *slog.Logger) (*model.Model, *checkpoint.Loaded, error) {
	path := r.Layout.Dir
	if name != "" {
		dir, err := r.Checkpoint(name)
		if err != nil {
			return nil, nil, err
		}
		path = dir
	}
	return checkpoint.LoadModel(path, ema, log)
}

// Codec is the run's codec (tokenizer) for the checkpoint state st
// (generate.CodecFor).
func (r *Run) Codec(st checkpoint.State) (generate.Codec, error) {
	return generate.CodecFor(r.Layout.Dir, st)
}

// Data opens the run's data as the checkpoint state st describes it
// (OpenData).
func (r *Run) Data(st checkpoint.State) (*Data, error) { return OpenData(r.Layout.Dir, st) }
