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
// its --set before anything is written.
func TestConfigsRefuseBadValues(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sweep")
	for _, flags := range [][]string{{"optim.lr=1e-3,fast"}, {"train.steps=10,nan"}, {"optim.lr=1e-3", "model.tied_embeddings=yes"}} {
		axes, err := ParseSet(flags)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), Options{Base: testrun.Bytes(), Axes: axes, Out: out, Train: failTrain(t)})
		last := flags[len(flags)-1]
		key, _, _ := strings.Cut(last, "=")
		if err == nil || !strings.Contains(err.Error(), "--set "+key) {
			t.Errorf("%q: err %v, want one naming --set %s", flags, err, key)
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
