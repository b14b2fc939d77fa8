// Package compare compares kestrel runs at equal tokens (`kestrel
// compare`, the dashboard's compare panel): the train loss over a window
// of recent steps, every evaluation metric (val_loss, slice_val_loss per
// source, bits per byte, benchmarks) at a common evaluation point with a
// standard error, the alerts and interventions each run had, and the
// config and manifest fields that differ; and a one-line verdict. It
// returns values (structs with JSON tags); the command and the dashboard
// print them. docs/branch.md defines each estimate.
package compare

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// DefaultWindow is the train-loss window in steps.
const DefaultWindow = 50

// Options tune a comparison.
type Options struct {
	// Window is the number of recent steps the train loss is averaged over
	// (0: DefaultWindow).
	Window int
	// ResolveConfig, when set, returns a run's config as TOML with every
	// default filled in (branch.ResolvedConfig), so that a key an older
	// kestrel did not write is compared by its default; nil compares
	// config.toml as written.
	ResolveConfig func(dir string) ([]byte, error)
}

// Report is a comparison of runs: every run after the first against the
// first (the baseline).
type Report struct {
	Runs  []Run  `json:"runs"`
	Pairs []Pair `json:"pairs"`
}

// Run is one compared run.
type Run struct {
	Dir        string         `json:"dir"`
	Name       string         `json:"name"`
	LastStep   int            `json:"last_step"`
	TokensSeen int64          `json:"tokens_seen"`
	BadLines   int            `json:"bad_lines,omitempty"` // metrics.jsonl lines that did not parse (skipped)
	Parent     *runlog.Parent `json:"parent,omitempty"`    // when the run is a branch
}

// Pair compares run B with run A.
type Pair struct {
	A, B string `json:"-"`
	// NameA and NameB name the runs in the verdict.
	NameA string `json:"a"`
	NameB string `json:"b"`
	// Verdict is the one-line answer ("canary is better than parent on
	// val_loss by 0.031 ± 0.006 nats at 2.1M tokens").
	Verdict string `json:"verdict"`
	// Tokens is the common token count the comparison stops at: the fewer
	// tokens_seen of the two runs.
	Tokens int64 `json:"tokens"`
	// SharedStep is the last step of the history the runs share bit for
	// bit (a branch's parent history; 0 for unrelated runs). Windows,
	// evaluation points and alerts are taken after it.
	SharedStep int `json:"shared_step"`
	// Identical: B repeats A's train_loss_raw bit for bit at every step
	// both have.
	Identical     bool              `json:"identical"`
	Train         *Delta            `json:"train_loss,omitempty"`
	Evals         []Delta           `json:"evals"`
	Alerts        []AlertCount      `json:"alerts"`
	Interventions []InterventionRow `json:"interventions"`
	Config        []FieldDiff       `json:"config"`
	Manifest      []FieldDiff       `json:"manifest"`
}

// Delta is one metric of B against A.
type Delta struct {
	Metric string  `json:"metric"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Delta  float64 `json:"delta"` // B − A
	// StdErr is the standard error of Delta (absent: no estimate; Noise
	// says why).
	StdErr *float64 `json:"stderr,omitempty"`
	// Noise says how StdErr was estimated: "paired steps" / "unpaired
	// steps" (train loss), "eval jitter" (evaluation metrics),
	// "bench_stderr" (benchmarks), or why there is none.
	Noise   string `json:"noise"`
	StepA   int    `json:"step_a"`
	StepB   int    `json:"step_b"`
	TokensA int64  `json:"tokens_a"`
	TokensB int64  `json:"tokens_b"`
	// Align is how the points were matched: "exact" (the same tokens_seen
	// in both), "nearest" (the nearest evaluation of A to B's), or
	// "window" (train loss: the mean of N steps up to the common tokens).
	Align string `json:"align"`
	N     int    `json:"n,omitempty"` // train loss: steps averaged
	// Better is "A" or "B" when |Delta| exceeds 2 standard errors (lower
	// is better except for bench/… accuracies and memorization), "" when
	// within noise or without an estimate.
	Better string `json:"better,omitempty"`
}

// AlertCount is how often a rule fired in each run after the shared
// history, up to the common tokens.
type AlertCount struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	A        int    `json:"a"`
	B        int    `json:"b"`
}

// InterventionRow is an intervention only one of the runs has.
type InterventionRow struct {
	Run     string `json:"run"` // "A" or "B"
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

// FieldDiff is a config leaf or manifest field that differs.
type FieldDiff struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
	// Absent names the run ("A" or "B") whose file lacks the field (its
	// value is "(absent)"): a config.toml written by an older kestrel,
	// whose missing keys take their defaults. Such rows come last.
	Absent string `json:"absent,omitempty"`
}

// Compare compares dirs[1:] with dirs[0]. One directory alone must be a
// branch (branch.json): it is compared with its parent.
func Compare(dirs []string, o Options) (*Report, error) {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if len(dirs) == 1 {
		p, err := runlog.ReadBranch(dirs[0])
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		if p == nil {
			return nil, fmt.Errorf("compare: %s is no branch (no %s): name the runs to compare, e.g. kestrel compare RUN_A RUN_B", dirs[0], runlog.BranchFile)
		}
		dirs = []string{p.Run, dirs[0]}
	}
	if len(dirs) < 2 {
		return nil, errors.New("compare: name two runs or more (or one branch)")
	}
	rep := &Report{}
	ss := make([]*series, len(dirs))
	for i, d := range dirs {
		s, err := readSeries(d)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		p, err := runlog.ReadBranch(d)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		ss[i] = s
		rep.Runs = append(rep.Runs, Run{Dir: d, Name: runName(d), LastStep: s.lastStep, TokensSeen: s.lastTok, BadLines: s.badLines, Parent: p})
	}
	for i := 1; i < len(dirs); i++ {
		p, err := pair(rep.Runs[0], rep.Runs[i], ss[0], ss[i], o)
		if err != nil {
			return nil, err
		}
		rep.Pairs = append(rep.Pairs, *p)
	}
	return rep, nil
}

// runName is the run directory's base name.
func runName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return filepath.Base(abs)
}

// pair compares run b with run a.
func pair(ra, rb Run, a, b *series, o Options) (*Pair, error) {
	p := &Pair{A: ra.Dir, B: rb.Dir, NameA: ra.Name, NameB: rb.Name}
	if p.NameA == p.NameB {
		p.NameA, p.NameB = "A ("+ra.Dir+")", "B ("+rb.Dir+")"
	}
	p.Tokens = min(a.lastTok, b.lastTok)
	p.SharedStep, p.Identical = shared(a.train, b.train)
	p.Train = trainDelta(a.train, b.train, p.SharedStep, p.Tokens, o.Window)
	for _, name := range evalNames(a, b) {
		if d := evalDelta(name, a, b, p.SharedStep, p.Tokens); d != nil {
			p.Evals = append(p.Evals, *d)
		}
	}
	var err error
	if p.Alerts, err = alertCounts(ra.Dir, rb.Dir, p.SharedStep, stepAt(a.train, p.Tokens), stepAt(b.train, p.Tokens)); err != nil {
		return nil, err
	}
	if p.Interventions, err = interventionRows(ra.Dir, rb.Dir); err != nil {
		return nil, err
	}
	if p.Config, err = configDiff(ra.Dir, rb.Dir, o.ResolveConfig); err != nil {
		return nil, err
	}
	if p.Manifest, err = manifestDiff(ra.Dir, rb.Dir); err != nil {
		return nil, err
	}
	p.Verdict = verdict(p)
	return p, nil
}

// shared returns the last step of the prefix the two runs share bit for
// bit (same step, tokens and train_loss_raw), and whether every step both
// have is equal.
func shared(a, b []point) (int, bool) {
	bs := map[int]point{}
	for _, x := range b {
		bs[x.Step] = x
	}
	last, identical, prefix := 0, true, true
	for _, x := range a {
		y, ok := bs[x.Step]
		if !ok {
			continue
		}
		same := y.Tokens == x.Tokens && math.Float64bits(y.V) == math.Float64bits(x.V)
		if !same {
			identical, prefix = false, false
		}
		if prefix && same {
			last = x.Step
		}
	}
	return last, identical
}

// stepAt is the last step of s at or below tokens.
func stepAt(s []point, tokens int64) int {
	step := 0
	for _, x := range s {
		if x.Tokens <= tokens {
			step = x.Step
		}
	}
	return step
}

// direction is −1 when a smaller value of metric is better (losses, bits
// per byte), +1 when a larger one is (bench/… accuracies), 0 when neither
// (memorization/…, the probe's entropy and top-k mass).
func direction(metric string) int {
	switch {
	case strings.HasPrefix(metric, "bench/"):
		return 1
	case strings.HasPrefix(metric, "memorization/"), metric == "logit_entropy_probe", metric == "topk_mass_probe":
		return 0
	}
	return -1
}

// better says which run is better on a delta: "" within 2 standard
// errors, without one, or for a metric with no better direction.
func better(d *Delta) string {
	dir := direction(d.Metric)
	if dir == 0 || d.StdErr == nil || math.Abs(d.Delta) <= 2**d.StdErr { // a standard error of 0: any difference counts
		return ""
	}
	if (d.Delta > 0) == (dir > 0) {
		return "B"
	}
	return "A"
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
