// Package branch makes a canary of a run (`kestrel branch`): a new run
// directory that starts from one of the parent's checkpoints, with one or
// more config changes, and trains a given number of steps. The branch
// resumes the parent's exact state (weights, optimizer, data position,
// step), so a branch with no change reproduces the parent bit for bit;
// its branch.json (runlog.Parent), copied into its manifest at every
// start, records the parent, the checkpoint's digest and the change. The
// parent is only read, never written or locked.
package branch

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// Options describe one branch.
type Options struct {
	Parent string   // the parent's run directory
	From   string   // the checkpoint, as checkpoint.Resolve takes it: last, last-good, step-N, a directory of the parent's checkpoints/
	Out    string   // the branch's run directory: new, empty, or an earlier branch
	Steps  int      // steps to train after the checkpoint's step
	Set    []string // section.key=value changes, in order
	Logger *slog.Logger
}

// Branch is a prepared branch directory: its config (the parent's with
// the changes) and its record.
type Branch struct {
	Dir    string
	Config config.Config
	Parent runlog.Parent
	// Resumed: Out already held this branch (an interrupted kestrel
	// branch rerun); training continues from its newest checkpoint.
	Resumed bool
}

// dataKeys are the keys a branch may change beyond those an intervention
// may (run.SettableKey): the data mixture's weights. The data order of
// each source stays a function of the seed; data.stages with a start_step
// after the branch point changes the mixture from there on.
var dataKeys = []string{"data.sources", "data.stages"}

// Prepare checks the options and installs the branch directory (or, when
// Out already holds this same branch, returns it to continue): the
// parent's config with the changes, a copy of the checkpoint (verified
// against its SHA256SUMS), the parent's probe batch, its metrics and
// alerts up to the checkpoint's step, its interventions and incident
// closures, and branch.json. Nothing is written when a check fails; the
// parent is only read.
func Prepare(o Options) (*Branch, error) {
	if o.Steps <= 0 {
		return nil, fmt.Errorf("branch: --steps must be > 0, got %d", o.Steps)
	}
	parent, err := filepath.Abs(o.Parent)
	if err != nil {
		return nil, fmt.Errorf("branch: %w", err)
	}
	ck, st, err := resolveCheckpoint(parent, o.From)
	if err != nil {
		return nil, err
	}
	base, err := config.Load(rundir.Of(parent).Config(), nil)
	if err != nil {
		return nil, fmt.Errorf("branch: parent config: %w", err)
	}
	cfg, err := applySet(o.Set, base)
	if err != nil {
		return nil, fmt.Errorf("branch: %w", err)
	}
	until := st.Step + o.Steps
	if until > cfg.Train.Steps {
		return nil, fmt.Errorf("branch: --steps %d from step %d ends at step %d, after train.steps = %d; branch fewer steps, or --set train.steps (it stretches the LR schedule)", o.Steps, st.Step, until, cfg.Train.Steps)
	}
	sums, err := runlog.HashFile(filepath.Join(ck, checkpoint.SumsFile))
	if err != nil {
		return nil, fmt.Errorf("branch: %w", err)
	}
	if b, err := resumable(o, parent, sums, st.Step); b != nil || err != nil {
		return b, err
	}
	out, err := open(cfg, o.Out, parent, o.Logger)
	if err != nil {
		return nil, err
	}
	ph, _ := config.Hash(base)
	b := &Branch{Dir: out, Config: cfg, Parent: runlog.Parent{
		Run: parent, Checkpoint: ck, Step: st.Step, TokensSeen: st.TokensSeen, SumsSHA256: sums, ConfigHash: ph,
		Set: slices.Clone(o.Set), Steps: o.Steps, UntilStep: until, Created: time.Now().UTC().Format(time.RFC3339),
	}}
	if err := atomicfile.WriteDir(out, func(tmp string) error { return b.fill(tmp) }); err != nil {
		return nil, fmt.Errorf("branch: %w", err)
	}
	return b, nil
}

// resumable returns the earlier branch in o.Out when it is this very
// branch — the same parent, checkpoint (by its SHA256SUMS digest), change
// and steps — so that rerunning an interrupted kestrel branch continues it
// (from its newest checkpoint, with its own config.toml) instead of
// starting it over; nil when there is none to continue.
func resumable(o Options, parent, sums string, step int) (*Branch, error) {
	if o.Out == "" || !fileguard.HasMarker(o.Out, runlog.BranchFile) {
		return nil, nil
	}
	prev, err := runlog.ReadBranch(o.Out)
	if err != nil || prev == nil {
		return nil, err
	}
	if prev.Run != parent || prev.SumsSHA256 != sums || prev.Step != step || prev.Steps != o.Steps || !slices.Equal(prev.Set, o.Set) {
		return nil, nil
	}
	dir, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, fmt.Errorf("branch: --out: %w", err)
	}
	cfg, err := config.Load(rundir.Of(dir).Config(), nil)
	if err != nil {
		return nil, fmt.Errorf("branch: the earlier branch's config: %w", err)
	}
	return &Branch{Dir: dir, Config: cfg, Parent: *prev, Resumed: true}, nil
}

// resolveCheckpoint turns the --from name into one of the parent's
// checkpoint directories that verifies, with its state.
func resolveCheckpoint(parent, from string) (string, *checkpoint.State, error) {
	ck, err := checkpoint.Resolve(parent, from)
	if err != nil {
		return "", nil, fmt.Errorf("branch: --from: %w", err)
	}
	if ck, err = filepath.Abs(ck); err != nil {
		return "", nil, fmt.Errorf("branch: --from: %w", err)
	}
	if root := checkpoint.Root(parent); !sameDir(filepath.Dir(ck), root) {
		return "", nil, fmt.Errorf("branch: --from %s: not a checkpoint of %s (its checkpoints are in %s)", from, parent, root)
	}
	if err := checkpoint.Verify(ck); err != nil {
		return "", nil, fmt.Errorf("branch: --from %s: %w", from, err)
	}
	st, err := checkpoint.ReadState(ck)
	if err != nil {
		return "", nil, fmt.Errorf("branch: --from %s: %w", from, err)
	}
	return ck, st, nil
}

func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// applySet applies the --set changes to the parent's config: the data
// mixture's keys (dataKeys) by type, every other key through the check
// of kestrel rewind --set (run.CheckSet: keys an intervention may set,
// types, ranges). An error names the key.
func applySet(flags []string, cfg config.Config) (config.Config, error) {
	rest := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return cfg, fmt.Errorf("--set %q: want section.key=value", f)
		}
		if !slices.Contains(dataKeys, k) {
			rest[k] = v
			continue
		}
		if cfg.Data.Kind != "dataset" {
			return cfg, fmt.Errorf("--set %s: the data mixture applies to data.kind = \"dataset\", the parent trains on %q", k, cfg.Data.Kind)
		}
		if err := (config.Override{Path: k, Value: v}).Apply(&cfg); err != nil {
			return cfg, fmt.Errorf("--set %s=%s: %w", k, v, err)
		}
	}
	cfg, err := run.CheckSet(rest, cfg)
	if err != nil {
		if strings.Contains(err.Error(), "cannot change mid-run") {
			return cfg, fmt.Errorf("--%w; a branch may also set %s (dataset runs)", err, strings.Join(dataKeys, " and "))
		}
		return cfg, fmt.Errorf("--%w", err)
	}
	return cfg, config.CheckFinite(cfg)
}

// open is the branch directory's opening (run.Opening, the ritual of
// every run directory) before anything is written: the output rule
// (checkOut), the branch's data source and the trainer's preflight
// (memory, validation data) on its config, so a change the data loader
// refuses (an unknown source in data.stages) is refused here, naming the
// field; then the lock of an earlier branch (probeLock). It returns the
// branch directory's absolute path; the data source is closed again.
func open(cfg config.Config, out, parent string, log *slog.Logger) (string, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var abs string
	to, err := run.Opening{
		Check: func() (err error) {
			abs, err = checkOut(out, parent)
			return err
		},
		Options: func() (train.Options, error) {
			to, err := run.TrainOptions(cfg, abs, log)
			if err != nil {
				return to, fmt.Errorf("branch: the branch's config: %w", err)
			}
			to.Fresh = false
			return to, nil
		},
		PreflightContext: "branch: the branch's config",
		Lock:             func(train.Options) error { return probeLock(abs, out) },
	}.Open()
	if err != nil {
		return "", err
	}
	if c, ok := to.Data.(io.Closer); ok {
		_ = c.Close()
	}
	return abs, nil
}

// checkOut applies the output rule to the branch directory: it is new,
// empty or an earlier branch (holding branch.json); never the parent,
// inside it, or a directory holding it.
func checkOut(out, parent string) (string, error) {
	if out == "" {
		return "", errors.New("branch: --out is required (a new directory, or an earlier branch to replace)")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("branch: --out: %w", err)
	}
	if fileguard.Within(abs, parent) || fileguard.Within(parent, abs) {
		return "", fmt.Errorf("branch: --out %s: the parent run %s is only read; write the branch beside it", out, parent)
	}
	g := fileguard.Dir{Path: abs, What: "branch directory", Markers: []string{runlog.BranchFile}}
	if err := g.Check(); err != nil {
		return "", fmt.Errorf("branch: --out: %w", err)
	}
	return abs, nil
}

// probeLock refuses an earlier branch in abs that a trainer holds: its
// lock is taken and released at once (the branch is installed atomically
// afterwards, and kestrel branch's training takes it again).
func probeLock(abs, out string) error {
	if !fileguard.HasMarker(abs, runlog.BranchFile) {
		return nil
	}
	lk, err := runlock.Acquire(abs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return fmt.Errorf("branch: --out %s: an earlier branch, not replaced: %w", out, err)
	}
	if err := lk.Release(); err != nil {
		return fmt.Errorf("branch: --out %s: %w", out, err)
	}
	return nil
}

// Describe is the line kestrel branch prints before training.
func (b *Branch) Describe() string {
	verb := "branch"
	if b.Resumed {
		verb = "continuing branch"
	}
	change := "no change"
	if len(b.Parent.Set) > 0 {
		change = "--set " + strings.Join(b.Parent.Set, " --set ")
	}
	return fmt.Sprintf("%s %s: from %s (step %d, %d tokens, SHA256SUMS %.12s…) with %s; training steps %d..%d",
		verb, b.Dir, b.Parent.Checkpoint, b.Parent.Step, b.Parent.TokensSeen, b.Parent.SumsSHA256, change, b.Parent.Step+1, b.Parent.UntilStep)
}

// ResolvedConfig returns the config of the run in dir as kestrel train
// reads it (defaults, then dir/config.toml), as TOML: kestrel compare's
// config differences then compare a key an older kestrel did not write
// by its default.
func ResolvedConfig(dir string) ([]byte, error) {
	cfg, err := config.Load(rundir.Of(dir).Config(), nil)
	if err != nil {
		return nil, err
	}
	return config.Marshal(cfg)
}
