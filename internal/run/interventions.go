package run

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// settableSections are the config sections an intervention (`kestrel
// rewind --set`, or a line of interventions.jsonl) may change mid-run. The
// model, the data, the seed, the warm-start source and the preparation
// define what the checkpoints and the batches are; a change there is a new
// run, not an intervention.
var settableSections = []string{"optim", "train", "checkpoint", "monitor", "debug", "dash"}

// settableKeys are single keys of other sections that may: necromancy
// (reset the Adam moments from the rewind point) is meant for a rewind.
var settableKeys = []string{"init.necromancy"}

// fixedKeys are keys of the settable sections that still may not change
// mid-run, with the reason the error gives.
var fixedKeys = map[string]string{
	"train.val_fraction":    "it chooses the validation split (bytes mode), so val_loss after the change would not compare with val_loss before it",
	"train.probe_sequences": "the probe batch is frozen in probe.json when the run starts",
}

// settableSection returns the section of cfg an intervention may change
// (by its name in the config), for its range check.
var settableSection = map[string]func(config.Config) any{
	"optim":      func(c config.Config) any { return c.Optim },
	"train":      func(c config.Config) any { return c.Train },
	"checkpoint": func(c config.Config) any { return c.Checkpoint },
	"monitor":    func(c config.Config) any { return c.Monitor },
	"debug":      func(c config.Config) any { return c.Debug },
	"dash":       func(c config.Config) any { return c.Dash },
	"init":       func(c config.Config) any { return c.Init },
}

// checkSection range-checks the section sec of cfg with its own Validate
// (a section without one, such as [dash]'s address and path, has no
// ranges to check).
func checkSection(sec string, cfg config.Config) error {
	get, ok := settableSection[sec]
	if !ok {
		return fmt.Errorf("section [%s] has no range check for interventions", sec)
	}
	if v, ok := get(cfg).(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

// SettableKey reports whether an intervention may set the config key
// (section.key), and why not.
func SettableKey(key string) error {
	sec, _, _ := strings.Cut(key, ".")
	if why, ok := fixedKeys[key]; ok {
		return fmt.Errorf("%s cannot change mid-run: %s", key, why)
	}
	if slices.Contains(settableSections, sec) || slices.Contains(settableKeys, key) {
		return nil
	}
	return fmt.Errorf("%s: section [%s] cannot change mid-run (settable: the sections %s, and %s)", key, sec, strings.Join(settableSections, ", "), strings.Join(settableKeys, ", "))
}

// CheckSet is the one check of an intervention's config overrides, used
// when kestrel rewind --set records them and when interventions.jsonl is
// read: every key must be settable (SettableKey), every value must have its
// field's type, and every section the overrides touch must still pass its
// Validate (ranges: checkpoint.keep = 0 is refused here, not at the next
// start). It returns cfg with the overrides applied, by key in sorted
// order; an error names the key and value.
func CheckSet(set map[string]string, cfg config.Config) (config.Config, error) {
	keys := slices.Sorted(maps.Keys(set))
	touched := map[string][]string{}
	for _, k := range keys {
		if err := SettableKey(k); err != nil {
			return cfg, fmt.Errorf("set %s=%s: %w", k, set[k], err)
		}
		if err := (config.Override{Path: k, Value: set[k]}).Apply(&cfg); err != nil {
			return cfg, fmt.Errorf("set %s=%s: %w", k, set[k], err)
		}
		sec, _, _ := strings.Cut(k, ".")
		touched[sec] = append(touched[sec], k+"="+set[k])
	}
	for _, sec := range slices.Sorted(maps.Keys(touched)) {
		if err := checkSection(sec, cfg); err != nil {
			return cfg, fmt.Errorf("set %s: %w", strings.Join(touched[sec], ", "), err)
		}
	}
	if err := config.CheckFinite(cfg); err != nil {
		return cfg, fmt.Errorf("set %s: %w", strings.Join(keys, ", "), err)
	}
	return cfg, nil
}

// ParseSet turns `section.key=value` flags into an intervention's Set and
// checks them with CheckSet against a config (the run's config.toml, when
// the caller has it). A key given twice keeps its last value.
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
		out[k] = v
	}
	if _, err := CheckSet(out, base); err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	return out, nil
}

// ApplyInterventions overlays the config overrides recorded by the run's
// effective interventions (interventions.jsonl, in order; within one, by
// key) on cfg, the config the user started the run with. It returns the
// config to train with and the effective interventions (nil when there are
// none). A run directory that does not exist yet has none. Every line is
// checked (rewind.Check: bounded skip windows; CheckSet: keys
// an intervention may set, values in range): an error names
// interventions.jsonl, the line, the intervention and the key. A rewind
// that a crash left half done (rewind.PendingFile) is completed first,
// under the run's lock, with a warning on slog.Default().
func ApplyInterventions(cfg config.Config, dir string) (config.Config, []runlog.Intervention, error) {
	path := filepath.Join(dir, runlog.InterventionsFile)
	if err := completePendingRewind(dir, slog.Default()); err != nil {
		return cfg, nil, err
	}
	all, err := runlog.ReadInterventions(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return cfg, nil, nil
		}
		return cfg, nil, err
	}
	where := func(i int) string {
		if n := recordLine(path, i); n > 0 {
			return fmt.Sprintf("%s:%d: intervention %s", path, n, all[i].ID)
		}
		return fmt.Sprintf("%s: intervention %s", path, all[i].ID)
	}
	if i, err := rewind.Check(all); err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", where(i), err)
	}
	index := make(map[string]int, len(all))
	for i, iv := range all {
		index[iv.ID] = i
		for k, v := range iv.Set { // superseded ones too: a hand-edited key is refused wherever it is
			if err := SettableKey(k); err != nil {
				return cfg, nil, fmt.Errorf("%s: set %s=%s: %w", where(i), k, v, err)
			}
		}
	}
	eff := rewind.Effective(all)
	for _, iv := range eff {
		if cfg, err = applySet(iv, cfg); err != nil {
			return cfg, nil, fmt.Errorf("%s: %w", where(index[iv.ID]), err)
		}
	}
	return cfg, eff, nil
}

// applySet is CheckSet of iv's overrides on cfg, the config in force up to
// iv's checkpoint, and refuses [[optim.phases]] that would change the LR
// of a step already trained (optim.CheckPhasesKeepPast, steps 1..ToStep).
func applySet(iv runlog.Intervention, cfg config.Config) (config.Config, error) {
	next, err := CheckSet(iv.Set, cfg)
	if err != nil {
		return cfg, err
	}
	if err := optim.CheckPhasesKeepPast(cfg.Optim, next.Optim, iv.ToStep); err != nil {
		return cfg, fmt.Errorf("set optim.phases=%s: %w", iv.Set["optim.phases"], err)
	}
	return next, nil
}

// CheckRewindPlan checks a planned rewind's overrides against the run's
// trajectory (rewind.Options.CheckPlan, called once the checkpoint is
// known): the run's config.toml with the interventions that stay in force
// and this one applied in order (applySet), so a phase that would change
// a step before the checkpoint is refused before anything moves.
func CheckRewindPlan(dir string, iv runlog.Intervention) error {
	cfg, err := config.Load(rundir.Of(dir).Config(), nil)
	if err != nil {
		return fmt.Errorf("the run's config: %w", err)
	}
	all, err := runlog.ReadInterventions(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range rewind.Effective(append(all, iv)) {
		if cfg, err = applySet(e, cfg); err != nil {
			return fmt.Errorf("intervention %s: %w", e.ID, err)
		}
	}
	return nil
}

// recordLine is the 1-based line of interventions.jsonl at path that holds
// its i-th record (runlog.ParseInterventions skips blank lines), or 0 when
// the file cannot be read again. Only errors call it.
func recordLine(path string, i int) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	k := 0
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if k == i {
			return n + 1
		}
		k++
	}
	return 0
}

// CheckRewindSet turns kestrel rewind's --set flags into config
// overrides checked against the run's resolved config (config.toml in
// dir): rewind.Options.CheckSet, which rewind.Rewind calls before it
// changes anything.
func CheckRewindSet(dir string, flags []string) (map[string]string, error) {
	base, err := config.Load(rundir.Of(dir).Config(), nil)
	if err != nil {
		return nil, fmt.Errorf("the run's config: %w", err)
	}
	return ParseSet(flags, base)
}

// completePendingRewind completes a rewind that a crash left half done in
// dir (rewind.Complete, under the run's lock), before its
// interventions are read. Nothing to do, the usual case, costs one stat.
func completePendingRewind(dir string, log *slog.Logger) error {
	if _, err := os.Lstat(filepath.Join(dir, rewind.PendingFile)); err != nil {
		return nil
	}
	if _, err := rewind.Complete(dir, nil, log); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}
