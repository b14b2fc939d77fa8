package run

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// settableSections are the config sections `kestrel rewind --set` may
// change mid-run. The model, the data, the seed, the warm-start source and
// the preparation define what the checkpoints and the batches are; a
// change there is a new run, not an intervention.
var settableSections = []string{"optim", "train", "checkpoint", "monitor", "debug", "dash"}

// settableKeys are single keys of other sections that may: necromancy
// (reset the Adam moments from the rewind point) is meant for a rewind.
var settableKeys = []string{"init.necromancy"}

// ParseSet turns `section.key=value` flags into an intervention's Set,
// checking each against a config (the run's, when the caller has it): the
// field must exist in a settable section and the value must have its type.
func ParseSet(flags []string, base config.Config) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want section.key=value", f)
		}
		sec, _, _ := strings.Cut(k, ".")
		allowed := false
		for _, s := range settableSections {
			allowed = allowed || s == sec
		}
		for _, s := range settableKeys {
			allowed = allowed || s == k
		}
		if !allowed {
			return nil, fmt.Errorf("--set %s: section [%s] cannot change mid-run (settable: the sections %s, and %s)", k, sec, strings.Join(settableSections, ", "), strings.Join(settableKeys, ", "))
		}
		trial := base
		if err := (config.Override{Path: k, Value: v}).Apply(&trial); err != nil {
			return nil, fmt.Errorf("--set: %w", err)
		}
		out[k] = v
	}
	return out, nil
}

// ApplyInterventions overlays the config overrides recorded by the run's
// effective interventions (interventions.jsonl, in order; within one, by
// key) on cfg, the config the user started the run with. It returns the
// config to train with and the effective interventions (nil when there are
// none). A run directory that does not exist yet has none.
func ApplyInterventions(cfg config.Config, dir string) (config.Config, []runlog.Intervention, error) {
	all, err := runlog.ReadInterventions(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return cfg, nil, nil
		}
		return cfg, nil, err
	}
	eff := train.EffectiveInterventions(all)
	for _, iv := range eff {
		keys := make([]string, 0, len(iv.Set))
		for k := range iv.Set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := (config.Override{Path: k, Value: iv.Set[k]}).Apply(&cfg); err != nil {
				return cfg, nil, fmt.Errorf("%s: intervention %s: %w", filepath.Join(dir, runlog.InterventionsFile), iv.ID, err)
			}
		}
	}
	if err := config.CheckFinite(cfg); err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", filepath.Join(dir, runlog.InterventionsFile), err)
	}
	return cfg, eff, nil
}

// RewindOptions are `kestrel rewind`'s choices; Set holds the raw
// section.key=value flags.
type RewindOptions struct {
	train.RewindOptions
	SetFlags []string
}

// Rewind checks the --set flags against the run's resolved config
// (config.toml in dir) and rewinds the run (train.Rewind). It does not
// train: the next `kestrel train` with the same config and --out resumes
// from the checkpoint with the intervention applied.
func Rewind(dir string, o RewindOptions) (*runlog.Intervention, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	if len(o.SetFlags) > 0 {
		base, err := config.Load(filepath.Join(dir, "config.toml"), nil)
		if err != nil {
			return nil, fmt.Errorf("rewind: the run's config: %w", err)
		}
		if o.Set, err = ParseSet(o.SetFlags, base); err != nil {
			return nil, fmt.Errorf("rewind: %w", err)
		}
	}
	return train.Rewind(dir, o.RewindOptions)
}

// ParseStepRange parses a range of training steps given to flag as "A:B"
// (inclusive) or "A" (one step); "" is no range (0, 0). The error names the
// flag.
func ParseStepRange(flag, s string) (from, to int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		b = a
	}
	if from, err = strconv.Atoi(strings.TrimSpace(a)); err == nil {
		to, err = strconv.Atoi(strings.TrimSpace(b))
	}
	if err != nil || from < 1 || to < from {
		return 0, 0, fmt.Errorf("%s %q: want A:B with 1 ≤ A ≤ B (training steps, inclusive)", flag, s)
	}
	return from, to, nil
}

// WriteRewind tells a person what a rewind of the run directory runDir did
// and how to continue.
func WriteRewind(w io.Writer, runDir string, iv *runlog.Intervention) {
	fmt.Fprintf(w, "%s: %s rewound from step %d to the checkpoint of step %d (%s)\n", iv.ID, runDir, iv.FromStep, iv.ToStep, iv.Checkpoint)
	if iv.SkipSteps > 0 {
		fmt.Fprintf(w, "  skips the batches of steps %d..%d (%d steps)\n", iv.SkipFrom, iv.SkipTo, iv.SkipSteps)
	}
	if iv.LRScale > 0 && iv.LRScale != 1 {
		span := fmt.Sprintf("%d steps", iv.LRSteps)
		if iv.LRSteps == 0 {
			span = "the rest of the run"
		}
		fmt.Fprintf(w, "  learning rate ×%g for %s\n", iv.LRScale, span)
	}
	keys := make([]string, 0, len(iv.Set))
	for k := range iv.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %s from step %d on\n", k, iv.Set[k], iv.ToStep+1)
	}
	archived := "none"
	if len(iv.ArchivedCheckpoints) > 0 {
		archived = strings.Join(iv.ArchivedCheckpoints, ", ")
	}
	fmt.Fprintf(w, "  metrics after step %d: %s; newer checkpoints: %s\n", iv.ToStep, iv.MetricsArchive, archived)
	fmt.Fprintf(w, "continue with the same command: kestrel train --config <the run's config> --out %s\n", runDir)
}
