package sweep

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/testrun"
)

func TestParseSetAndGrid(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  []string // point names in grid order
		vals  [][]string
	}{
		{"one axis", []string{"optim.lr=1e-3,2e-3,4e-3"}, []string{"lr=1e-3", "lr=2e-3", "lr=4e-3"}, nil},
		{"two axes, last fastest", []string{"optim.lr=1e-3,2e-3", "optim.warmup_steps=5,10"},
			[]string{"lr=1e-3_warmup_steps=5", "lr=1e-3_warmup_steps=10", "lr=2e-3_warmup_steps=5", "lr=2e-3_warmup_steps=10"}, nil},
		{"commas inside brackets and quotes", []string{`eval.tasks=["a,b"],[]`}, []string{`tasks=[_a,b_]`, "tasks=[]"},
			[][]string{{`["a,b"]`, "[]"}}},
		{"one value", []string{"train.batch_size=8"}, []string{"batch_size=8"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			axes, err := ParseSet(tc.flags)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range Grid(axes) {
				got = append(got, p.Name)
				if len(p.Set) != len(axes) {
					t.Errorf("%s: %d overrides, want %d", p.Name, len(p.Set), len(axes))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("grid %q, want %q", got, tc.want)
			}
			for i, v := range tc.vals {
				if !slices.Equal(axes[i].Values, v) {
					t.Errorf("axis %d values %q, want %q", i, axes[i].Values, v)
				}
			}
		})
	}
}

func TestParseSetRefuses(t *testing.T) {
	tests := []struct {
		flags []string
		want  string // in the error
	}{
		{[]string{"optim.learning_rate=1e-3"}, `unknown config field "optim.learning_rate"`},
		{[]string{"lr"}, "want section.key=v1,v2"},
		{[]string{"=1"}, "want section.key=v1,v2"},
		{[]string{"optim.lr=1e-3,"}, "value 2 of optim.lr is empty"},
		{[]string{"optim.lr=1e-3", "optim.lr=2e-3"}, "optim.lr is already swept"},
	}
	for _, tc := range tests {
		_, err := ParseSet(tc.flags)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSet(%q) = %v, want an error with %q", tc.flags, err, tc.want)
		}
	}
}

// TestConfigsRefuseBadValues: a value of the wrong type is refused naming
// its --set and the value before anything is written.
func TestConfigsRefuseBadValues(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sweep")
	for _, tc := range []struct {
		flags []string
		want  string // --set key=value in the error
	}{
		{[]string{"optim.lr=1e-3,fast"}, "--set optim.lr=fast"},
		{[]string{"train.steps=10,nan"}, "--set train.steps=nan"},
		{[]string{"train.steps=1.5"}, "--set train.steps=1.5"},
		{[]string{"optim.lr=1e-3", "model.tied_embeddings=yes"}, "--set model.tied_embeddings=yes"},
		// Two points, one run directory: the second would resume the first.
		{[]string{"optim.lr=1e-3,2e-3,1e-3"}, "--set optim.lr=1e-3,2e-3,1e-3"},
		{[]string{"optim.lr=1e-3", "data.train=a/b,a_b"}, "--set data.train=a/b,a_b"},
	} {
		flags := tc.flags
		axes, err := ParseSet(flags)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), Options{Base: testrun.Bytes(), Axes: axes, Out: out, Train: failTrain(t)})
		if err == nil || !strings.Contains(err.Error(), tc.want+":") {
			t.Errorf("%q: err %v, want one naming %s", flags, err, tc.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%q: %s was created", flags, out)
		}
	}
	if _, err := Run(context.Background(), Options{Base: testrun.Bytes(), Out: out, Train: failTrain(t)}); err == nil {
		t.Error("a sweep with no --set ran")
	}
}

func failTrain(t *testing.T) func(context.Context, config.Config, string, *slog.Logger) error {
	return func(context.Context, config.Config, string, *slog.Logger) error {
		t.Error("a run started")
		return nil
	}
}

// TestSweepTwoByTwo trains a 2×2 grid of the tiny byte-level model: four
// run directories, each a normal run with its own config, and a table
// whose values are those of the runs' metrics.
func TestSweepTwoByTwo(t *testing.T) {
	dir := t.TempDir()
	val, err := testrun.ValText(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := testrun.Bytes()
	base.Data.Val = val
	base.Train.EvalEvery = 4
	base.Checkpoint.Every = 0
	base.Samples.Enabled = false
	base.Run.Name = "tiny"
	axes, err := ParseSet([]string{"optim.lr=1e-3,3e-3", "optim.warmup_steps=2,4"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sweep")
	res, err := Run(context.Background(), Options{Base: base, Axes: axes, Steps: 8, Out: out, Logger: testrun.Quiet()}) // run.Train
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"lr=1e-3_warmup_steps=2", "lr=1e-3_warmup_steps=4", "lr=3e-3_warmup_steps=2", "lr=3e-3_warmup_steps=4"}
	if len(res) != len(wantNames) {
		t.Fatalf("%d results, want %d", len(res), len(wantNames))
	}
	finals := map[float64]bool{}
	for i, r := range res {
		if r.Name != wantNames[i] || r.Err != nil || r.Status() != "done" || r.LastStep != 8 {
			t.Errorf("result %d: %s err %v status %s last step %d, want %s done at step 8", i, r.Name, r.Err, r.Status(), r.LastStep, wantNames[i])
		}
		if math.IsNaN(r.FinalVal) || math.IsNaN(r.BestVal) || r.BestVal > r.FinalVal || (r.BestStep != 4 && r.BestStep != 8) {
			t.Errorf("%s: final %v best %v at %d", r.Name, r.FinalVal, r.BestVal, r.BestStep)
		}
		finals[r.FinalVal] = true
		got, err := config.Load(rundir.Of(filepath.Join(out, r.Name)).Config(), nil)
		if err != nil {
			t.Fatal(err)
		}
		lr, warm := []float64{1e-3, 1e-3, 3e-3, 3e-3}[i], []int{2, 4, 2, 4}[i]
		if got.Optim.LR != lr || got.Optim.Warmup != warm || got.Train.Steps != 8 || got.Run.Name != "tiny-"+r.Name {
			t.Errorf("%s: config lr %v warmup %d steps %d name %s", r.Name, got.Optim.LR, got.Optim.Warmup, got.Train.Steps, got.Run.Name)
		}
	}
	if len(finals) != 4 {
		t.Errorf("final vals %v: the four runs should differ", finals)
	}
	if err := Failed(res); err != nil {
		t.Error(err)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, res); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 5 || strings.Count(buf.String(), " *") != 1 {
		t.Errorf("table:\n%s", buf.String())
	}
	// The same sweep again trains nothing: every run is finished.
	again, err := Run(context.Background(), Options{Base: base, Axes: axes, Steps: 8, Out: out, Logger: testrun.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if again[i].FinalVal != res[i].FinalVal || again[i].LastStep != 8 {
			t.Errorf("%s again: final %v at step %d, want %v at 8", again[i].Name, again[i].FinalVal, again[i].LastStep, res[i].FinalVal)
		}
	}
}

// TestSweepInterrupted: a cancelled context starts no further point, and
// the table has only the points that ran.
func TestSweepInterrupted(t *testing.T) {
	axes, err := ParseSet([]string{"optim.lr=1e-3,2e-3,3e-3"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ran []string
	train := func(_ context.Context, cfg config.Config, dir string, _ *slog.Logger) error {
		ran = append(ran, filepath.Base(dir))
		cancel() // Ctrl-C during the first run
		return nil
	}
	res, err := Run(ctx, Options{Base: testrun.Bytes(), Axes: axes, Out: t.TempDir(), Train: train, Logger: testrun.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"lr=1e-3"}) || len(res) != 1 || res[0].Status() != "interrupted" {
		t.Errorf("ran %q, results %+v: want only lr=1e-3, interrupted", ran, res)
	}
}

// TestSweepParallelProcesses: --parallel runs each point as `kestrel train
// --config <out>/.configs/<point>.toml --out <out>/<point>` on one thread
// (a stand-in script here records its arguments and GOMAXPROCS and writes
// the metrics a run would), a failing process is a failed row with its log
// named, and the others are read back.
func TestSweepParallelProcesses(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kestrel")
	script := `#!/bin/sh
# train --config CFG --out DIR
cfg=$3; out=$5
mkdir -p "$out"
echo "$GOMAXPROCS $*" > "$out/args"
case "$cfg" in *lr=9*) echo "boom" >&2; exit 3;; esac
printf '{"step":1,"train_loss_raw":5}\n{"step":2,"val_loss":2.5}\n{"step":4,"val_loss":2.25}\n' > "$out/metrics.jsonl"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	axes, err := ParseSet([]string{"optim.lr=1e-3,9e-3,2e-3"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sweep")
	res, err := Run(context.Background(), Options{Base: testrun.Bytes(), Axes: axes, Steps: 4, Out: out, Parallel: 2, Exec: bin, Logger: testrun.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("%d results, want 3", len(res))
	}
	for _, r := range res {
		failed := r.Name == "lr=9e-3"
		if failed != (r.Status() == "failed") || (failed && !strings.Contains(r.Err.Error(), r.Name+".log")) {
			t.Errorf("%s: status %s err %v", r.Name, r.Status(), r.Err)
		}
		args, err := os.ReadFile(filepath.Join(out, r.Name, "args"))
		if err != nil {
			t.Fatal(err)
		}
		want := "1 train --config " + filepath.Join(out, ".configs", r.Name+".toml") + " --out " + filepath.Join(out, r.Name)
		if strings.TrimSpace(string(args)) != want {
			t.Errorf("%s: ran %q, want %q", r.Name, args, want)
		}
		cfg, err := config.Load(filepath.Join(out, ".configs", r.Name+".toml"), nil)
		if err != nil || cfg.Train.Steps != 4 {
			t.Errorf("%s: config steps %d, err %v", r.Name, cfg.Train.Steps, err)
		}
		if !failed && (r.FinalVal != 2.25 || r.BestVal != 2.25 || r.BestStep != 4 || r.LastStep != 4) {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	if err := Failed(res); err == nil || !strings.Contains(err.Error(), "1 of 3 runs failed: lr=9e-3") {
		t.Errorf("Failed: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "lr=9e-3.log")); !strings.Contains(string(b), "boom") {
		t.Errorf("the failing run's log holds %q", b)
	}
}

// TestSweepOutGuard: the sweep directory follows fileguard's rule. A
// directory of the user's (files, no sweep.json), a symbolic link and a
// file are refused before anything is written or trained; a new or empty
// directory, one with sweep.json, and a sweep of an earlier kestrel (a run
// directory of one of its points, no sweep.json) are taken, and get
// sweep.json.
func TestSweepOutGuard(t *testing.T) {
	axes, err := ParseSet([]string{"optim.lr=1e-3,2e-3"})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, config.Config, string, *slog.Logger) error { return nil }
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T, out string)
		refuse string // in the error; "" = taken
	}{
		{"new", func(*testing.T, string) {}, ""},
		{"empty", func(t *testing.T, out string) { mkdir(t, out) }, ""},
		{"user's", func(t *testing.T, out string) { mkdir(t, out); write(t, filepath.Join(out, "notes.txt"), "mine") }, "no sweep.json in it"},
		{"user's with a point's name", func(t *testing.T, out string) {
			mkdir(t, filepath.Join(out, "lr=1e-3"))
			write(t, filepath.Join(out, "lr=1e-3", "notes.txt"), "mine")
		}, "no sweep.json"},
		{"file", func(t *testing.T, out string) { write(t, out, "mine") }, "sweep directory"},
		{"link", func(t *testing.T, out string) {
			target := out + "-target"
			mkdir(t, target)
			if err := os.Symlink(target, out); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"marked", func(t *testing.T, out string) {
			mkdir(t, out)
			write(t, filepath.Join(out, Marker), "{}")
			write(t, filepath.Join(out, "x.log"), "old")
		}, ""},
		{"earlier kestrel's", func(t *testing.T, out string) { mkdir(t, filepath.Join(out, "lr=2e-3", "checkpoints")) }, ""},
	} {
		out := filepath.Join(t.TempDir(), "sweep")
		tc.make(t, out)
		train := noop
		if tc.refuse != "" {
			train = failTrain(t)
		}
		_, err := Run(context.Background(), Options{Base: testrun.Bytes(), Axes: axes, Out: out, Train: train, Logger: testrun.Quiet()})
		_, merr := os.Lstat(filepath.Join(out, Marker))
		switch {
		case tc.refuse == "" && (err != nil || merr != nil):
			t.Errorf("%s: err %v, marker %v", tc.name, err, merr)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), "--out")):
			t.Errorf("%s: err %v, want a refusal naming --out and %q", tc.name, err, tc.refuse)
		case tc.refuse != "" && merr == nil:
			t.Errorf("%s: refused, yet %s was written", tc.name, Marker)
		}
	}
}

// TestSweepParallelResumeKeepsLog: the same --parallel sweep again (a
// resume) appends to each point's log, so the interrupted attempt's output
// stays; a log that is a symbolic link is a failed row and its target is
// not written.
func TestSweepParallelResumeKeepsLog(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kestrel")
	script := `#!/bin/sh
mkdir -p "$5"
echo "attempt $(ls "$5" | wc -l)"
touch "$5/attempt-$(date +%s%N)"
printf '{"step":4,"val_loss":2.25}\n' > "$5/metrics.jsonl"
`
	write(t, bin, script)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	axes, err := ParseSet([]string{"optim.lr=1e-3,2e-3"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sweep")
	o := Options{Base: testrun.Bytes(), Axes: axes, Steps: 4, Out: out, Parallel: 2, Exec: bin, Logger: testrun.Quiet()}
	for range 2 {
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "lr=1e-3.log"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Count(s, "=== kestrel sweep: ") != 2 || !strings.Contains(s, "attempt 0") || !strings.Contains(s, "attempt 2") {
		t.Errorf("log after two attempts:\n%s", s)
	}
	target := filepath.Join(dir, "elsewhere.txt")
	write(t, target, "mine")
	if err := os.Remove(filepath.Join(out, "lr=2e-3.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(out, "lr=2e-3.log")); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[1].Status() != "failed" || !strings.Contains(res[1].Err.Error(), "not a regular file") || res[0].Status() != "done" {
		t.Errorf("results %+v", res)
	}
	if b, _ := os.ReadFile(target); string(b) != "mine" {
		t.Errorf("the link's target now holds %q", b)
	}
}

// TestSweepParallelNote: --parallel with a config whose
// train.parallel_micro_batches > 1 says once, in the sweep's own output,
// that each point's passes take turns on its one thread; --parallel 1
// and a config without it say nothing.
func TestSweepParallelNote(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kestrel")
	write(t, bin, "#!/bin/sh\nmkdir -p \"$5\"\n")
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	axes, err := ParseSet([]string{"optim.lr=1e-3,2e-3,3e-3"})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, config.Config, string, *slog.Logger) error { return nil }
	for _, tc := range []struct {
		parallel, micro, want int
	}{{2, 2, 1}, {2, 1, 0}, {1, 2, 0}} {
		var buf bytes.Buffer
		base := testrun.Bytes()
		base.Train.ParallelMicroBatches = tc.micro
		o := Options{Base: base, Axes: axes, Out: filepath.Join(t.TempDir(), "s"), Parallel: tc.parallel, Exec: bin, Train: noop,
			Logger: slog.New(slog.NewTextHandler(&buf, nil))}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(buf.String(), "passes take turns"); n != tc.want {
			t.Errorf("--parallel %d, parallel_micro_batches %d: said it %d times, want %d:\n%s", tc.parallel, tc.micro, n, tc.want, buf.String())
		}
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSweepStepsChanged: the same sweep with another --steps is refused
// before anything is trained (its finished points would go on under
// another LR schedule), naming both; the same --steps resumes; --steps
// beside a --set of train.steps (which it would override) is refused; a
// sweep.json that is not JSON is an error naming it.
func TestSweepStepsChanged(t *testing.T) {
	axes, err := ParseSet([]string{"optim.lr=1e-3,2e-3"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "sweep")
	noop := func(context.Context, config.Config, string, *slog.Logger) error { return nil }
	o := Options{Base: testrun.Bytes(), Axes: axes, Steps: 5, Out: out, Train: noop, Logger: testrun.Quiet()}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), o); err != nil {
		t.Errorf("same --steps again: %v", err)
	}
	o.Steps, o.Train = 10, failTrain(t)
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "a sweep of --steps 5; --steps 10") {
		t.Errorf("--steps 10 after 5: err %v", err)
	}
	steps, err := ParseSet([]string{"train.steps=100,200"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Base: testrun.Bytes(), Axes: steps, Steps: 300, Out: t.TempDir(), Train: failTrain(t)}); err == nil ||
		!strings.Contains(err.Error(), "--set train.steps=100,200 and --steps 300") {
		t.Errorf("--set train.steps with --steps: err %v", err)
	}
	write(t, filepath.Join(out, Marker), "{")
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), Marker) {
		t.Errorf("corrupt %s: err %v", Marker, err)
	}
}
