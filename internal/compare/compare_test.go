package compare_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/branch"
	"github.com/kestrel-lm/kestrel/internal/compare"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/testrun"
)

// tinyRun trains on Shakespeare, validating on the 16 KiB text val (the
// full evaluation at train.steps stays fast).
func tinyRun(val string) config.Config {
	cfg := testrun.Bytes()
	cfg.Data.Val = val
	cfg.Train.Steps, cfg.Train.EvalEvery = 24, 4
	cfg.Optim.Warmup = 3
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 8, 5
	cfg.Monitor.Window, cfg.Monitor.SpikeFollow, cfg.Monitor.Cooldown = 8, 4, 4
	return cfg
}

// runs trains a parent (24 steps) and two branches from its step 8 to
// step 20: one with optim.lr ×4, one with no change.
func runs(t *testing.T) (parent, lr, same string) {
	t.Helper()
	tmp := t.TempDir()
	val, err := testrun.ValText(tmp)
	if err != nil {
		t.Fatal(err)
	}
	parent = filepath.Join(tmp, "parent")
	if _, err := run.Train(context.Background(), tinyRun(val), parent, run.Options{Logger: testrun.Quiet()}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		dir *string
		set []string
	}{{&lr, []string{"optim.lr=1.2e-2"}}, {&same, nil}} {
		*b.dir = filepath.Join(tmp, fmt.Sprintf("branch%d", len(b.set)))
		br, err := branch.Prepare(branch.Options{Parent: parent, From: "step-8", Out: *b.dir, Steps: 12, Set: b.set, Logger: testrun.Quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Train(context.Background(), br.Config, br.Dir, run.Options{Logger: testrun.Quiet()}); err != nil {
			t.Fatal(err)
		}
	}
	return parent, lr, same
}

// line is one metrics.jsonl record, read independently of the package.
type line struct {
	Step   int      `json:"step"`
	Tokens int64    `json:"tokens_seen"`
	Train  *float64 `json:"train_loss_raw"`
	Val    *float64 `json:"val_loss"`
	Event  string   `json:"event"`
}

func readLines(t *testing.T, dir string) (train, val map[int]line) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	train, val = map[int]line{}, map[int]line{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Event != "":
		case l.Train != nil:
			train[l.Step] = l
		case l.Val != nil:
			val[l.Step] = l
		}
	}
	return train, val
}

// TestCompareBranchWithParent: kestrel compare BRANCH (a branch with a 4×
// LR from step 8 to step 20) against its parent: the shared history, the
// train-loss window (paired per step), val_loss at step 20 with the eval
// jitter's standard error, the config and manifest differences and the
// verdict all match what is computed here from the two metrics.jsonl; the
// same runs named explicitly give the same numbers; a branch with no change
// is "identical"; a run that is no branch alone is refused.
func TestCompareBranchWithParent(t *testing.T) {
	parent, lr, same := runs(t)
	rep, err := compare.Compare([]string{lr}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Pairs[0]
	pt, pv := readLines(t, parent)
	bt, bv := readLines(t, lr)

	// Shared: steps 1..9 (step 9's loss is measured before the first
	// update with the new LR).
	shared := 0
	for s := 1; bt[s].Train != nil && pt[s].Train != nil && *bt[s].Train == *pt[s].Train; s++ {
		shared = s
	}
	if shared != 9 || p.SharedStep != shared {
		t.Fatalf("shared step %d, computed %d (want 9)", p.SharedStep, shared)
	}
	if p.Tokens != bt[20].Tokens || bt[21].Train != nil {
		t.Errorf("common tokens %d, branch step 20 has %d", p.Tokens, bt[20].Tokens)
	}
	// Train loss: steps 10..20 paired.
	var d []float64
	for s := shared + 1; s <= 20; s++ {
		d = append(d, *bt[s].Train-*pt[s].Train)
	}
	mean, sd := meanSD(d)
	tr := p.Train
	if tr == nil || tr.N != 11 || tr.Noise != "paired steps" || !close(tr.Delta, mean) || tr.StdErr == nil || !close(*tr.StdErr, sd/math.Sqrt(11)) {
		t.Errorf("train delta %+v; want mean %g, se %g over 11 paired steps", tr, mean, sd/math.Sqrt(11))
	}
	// val_loss at step 20 in both, jitter over the evaluations at 0 < s ≤ 20.
	var vd *compare.Delta
	for i := range p.Evals {
		if p.Evals[i].Metric == "val_loss" {
			vd = &p.Evals[i]
		}
	}
	want := *bv[20].Val - *pv[20].Val
	se := math.Hypot(jit(pv, 20), jit(bv, 20))
	if vd == nil || vd.Align != "exact" || vd.StepA != 20 || vd.StepB != 20 || !close(vd.Delta, want) || vd.StdErr == nil || !close(*vd.StdErr, se) {
		t.Fatalf("val delta %+v; want %g ± %g at step 20", vd, want, se)
	}
	if want == 0 {
		t.Fatal("the 4× LR changed nothing at step 20")
	}
	verb := "no difference beyond noise"
	switch {
	case math.Abs(want) > 2*se && want < 0:
		verb = fmt.Sprintf("branch1 is better than parent on val by %.3f ± %.3f nats", -want, se)
	case math.Abs(want) > 2*se:
		verb = fmt.Sprintf("branch1 is worse than parent on val by %.3f ± %.3f nats", want, se)
	}
	if !strings.Contains(p.Verdict, verb) {
		t.Errorf("verdict %q; want it to say %q", p.Verdict, verb)
	}
	if len(p.Config) != 1 || p.Config[0].Field != "optim.lr" || p.Config[0].A != "0.003" || p.Config[0].B != "0.012" {
		t.Errorf("config differences %+v; want optim.lr 0.003 → 0.012 only", p.Config)
	}
	fields := map[string]bool{}
	for _, f := range p.Manifest {
		fields[f.Field] = true
	}
	if !fields["parent"] || !fields["config_hash"] || fields["dataset_hash"] || fields["git_sha"] {
		t.Errorf("manifest differences %+v; want parent and config_hash, not the data or the build", p.Manifest)
	}
	// The same two runs named explicitly.
	rep2, err := compare.Compare([]string{parent, lr}, compare.Options{})
	if err != nil || rep2.Pairs[0].Verdict != p.Verdict {
		t.Errorf("explicit pair: %v, verdict %q vs %q", err, rep2.Pairs[0].Verdict, p.Verdict)
	}
	// No change: identical.
	rep3, err := compare.Compare([]string{same}, compare.Options{})
	if err != nil || !rep3.Pairs[0].Identical || !strings.HasPrefix(rep3.Pairs[0].Verdict, "identical") || rep3.Pairs[0].Train != nil {
		t.Errorf("no-change branch: %v, %+v", err, rep3.Pairs)
	}
	if _, err := compare.Compare([]string{parent}, compare.Options{}); err == nil || !strings.Contains(err.Error(), "no branch") {
		t.Errorf("a lone run that is no branch: %v", err)
	}
	// The table kestrel compare prints of such a report is tested with the
	// printer (cmd/kestrel/internal/show's golden tests).
}

func meanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

// jit is the eval jitter from the last 4 val_loss values at steps ≤ upTo.
func jit(val map[int]line, upTo int) float64 {
	var vs []float64
	for s := 1; s <= upTo; s++ {
		if l, ok := val[s]; ok {
			vs = append(vs, *l.Val)
		}
	}
	if len(vs) > 4 {
		vs = vs[len(vs)-4:]
	}
	sum := 0.0
	for i := 1; i+1 < len(vs); i++ {
		dd := vs[i-1] - 2*vs[i] + vs[i+1]
		sum += dd * dd
	}
	return math.Sqrt(sum / float64(len(vs)-2) / 6)
}

func close(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestCompareConfigDefaults: a key one run's config.toml lacks (written by
// an older kestrel) compares by its default with ResolveConfig
// (branch.ResolvedConfig, as kestrel compare passes it), and shows as
// "(none)" without.
func TestCompareConfigDefaults(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	warm := config.Default().Optim.Warmup
	tomls := []string{"[optim]\nlr = 0.001\n", fmt.Sprintf("[optim]\nlr = 0.002\nwarmup_steps = %d\n", warm)}
	for i, d := range dirs {
		lines := `{"step":1,"tokens_seen":10,"train_loss_raw":3}` + "\n" + fmt.Sprintf(`{"step":2,"tokens_seen":20,"train_loss_raw":%d}`, 2+i) + "\n"
		if err := os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "config.toml"), []byte(tomls[i]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		resolve func(string) ([]byte, error)
		want    string
	}{
		{nil, "optim.lr optim.warmup_steps"},
		{branch.ResolvedConfig, "optim.lr"},
	} {
		rep, err := compare.Compare(dirs, compare.Options{ResolveConfig: tc.resolve})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range rep.Pairs[0].Config {
			got = append(got, f.Field)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("resolve %v: config differences %v, want %s", tc.resolve != nil, rep.Pairs[0].Config, tc.want)
		}
	}
}
