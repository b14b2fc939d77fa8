package run

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// TestHeldOutSourceNoFalseSEV0: validation sources of weight 0 (three
// held-out domains: bytes 128–255, which Tiny Shakespeare never holds) cost
// far more than a uniform prediction — the mean over every source is worse
// than uniform, SEV0 divergence — yet the run is not stopped as diverged:
// val_loss is the trained source's, the held-out ones are reported as their
// slices only.
func TestHeldOutSourceNoFalseSEV0(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	tr, va := byteDocs(t, "tinyshakespeare/input.txt", "\n\n")
	ds := &loader.Dataset{Name: "held-out", Sources: []loader.Source{{Name: "shakespeare", Train: tr, Val: va}}}
	srcs := []loader.SourceConfig{{Name: "shakespeare", Weight: 1}}
	for k := 1; k <= 3; k++ { // three held-out domains
		var docs [][]int32
		for d := 0; d < 64; d++ {
			doc := make([]int32, 200)
			for i := range doc {
				doc[i] = int32(128 + (d*31+i*7*k+i*i)%128)
			}
			docs = append(docs, doc)
		}
		name := fmt.Sprintf("heldout%d", k)
		ds.Sources = append(ds.Sources, loader.Source{Name: name, Train: loader.NewMemStream(docs), Val: loader.NewMemStream(docs)})
		srcs = append(srcs, loader.SourceConfig{Name: name, Weight: 0})
	}
	cfg := tinyRun(150)
	cfg.Train.EvalEvery = 50
	opts, err := TrainOptions(cfg, t.TempDir(), quietLog()) // a bytes run, whose data is then replaced
	if err != nil {
		t.Fatal(err)
	}
	dir := opts.Dir
	cfg.Data = loader.DefaultConfig()
	cfg.Data.Kind, cfg.Data.MixBlock, cfg.Data.ValMaxSeqs = "dataset", 64, 8
	cfg.Data.Sources = srcs
	l, err := NewLoader(ds, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opts.Data = l
	ob, err := NewObserver(cfg, dir, opts.Logger, &opts.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	opts.Observers = append(opts.Observers, ob)
	res, err := train.Run(context.Background(), opts)
	if err := ob.Finish(err); err != nil {
		t.Fatalf("the run was stopped: %v", err)
	}
	if res.Step != 150 {
		t.Fatalf("run ended at step %d", res.Step)
	}
	for _, a := range readAlerts(t, dir) {
		if a.Severity == monitor.SEV0 {
			t.Errorf("SEV0 on a healthy run: %+v", a)
		}
	}
	lnV := math.Log(256)
	evals := metricLines(t, dir)
	n := 0
	for _, e := range evalLinesOf(t, dir) {
		n++
		val, sh, ho := e["val_loss"], e["slice_val_loss/shakespeare"], e["slice_val_loss/heldout1"]
		if val != sh {
			t.Errorf("step %v: val_loss %g, want the trained source's %g", e["step"], val, sh)
		}
		if !(ho > lnV+cfg.Monitor.DivergenceValMargin) {
			t.Errorf("step %v: held-out slice %g is not worse than uniform (%g): the test proves nothing", e["step"], ho, lnV)
		}
		for k := 2; k <= 3; k++ {
			if _, ok := e[fmt.Sprintf("slice_val_loss/heldout%d", k)]; !ok {
				t.Errorf("step %v: no slice_val_loss/heldout%d", e["step"], k)
			}
		}
	}
	if n != 3 || len(evals) != 150 {
		t.Errorf("%d evaluations, %d steps", n, len(evals))
	}
}

// evalLinesOf returns the evaluation lines (those with val_loss) of a
// run's metrics.jsonl, their numbers as float64.
func evalLinesOf(t *testing.T, dir string) []map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw["val_loss"]; !ok {
			continue
		}
		m := map[string]float64{}
		for k, v := range raw {
			if x, ok := v.(float64); ok {
				m[k] = x
			}
		}
		out = append(out, m)
	}
	return out
}
