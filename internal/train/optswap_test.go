package train

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestSwapOptimizerState: what a swap keeps and what starts fresh, per
// pair of optimizers, on a layout with Muon matrices, an excluded head, an
// embedding and a norm.
func TestSwapOptimizerState(t *testing.T) {
	spans := []optim.Span{
		{Name: "embed", Offset: 0, Size: 6, Kind: "embedding"},
		{Name: "q", Offset: 6, Size: 6, Kind: "matrix", Shape: []int{2, 3}},
		{Name: "norm", Offset: 12, Size: 2, Kind: "norm"},
		{Name: "lm_head.weight", Offset: 14, Size: 4, Kind: "matrix", Shape: []int{2, 2}},
	}
	const n = 18
	cases := []struct {
		from, to  string
		freshM    []string // spans whose M is zeroed
		freshV    []string // spans whose V is zeroed
		steps     int      // the step count after the swap (from 7)
		rebase    bool
		wantNoted string
	}{
		{from: "", to: "muon", freshM: []string{"q"}, freshV: []string{"q"}, steps: 7, rebase: true, wantNoted: "adamw→muon"},
		{from: "muon", to: "adamw", freshM: []string{"q"}, steps: 0, rebase: true, wantNoted: "muon→adamw"},
		{from: "muon", to: "nadamw", freshM: []string{"q"}, steps: 0, rebase: true, wantNoted: "muon→nadamw"},
		{from: "", to: "nadamw", steps: 7, wantNoted: "adamw→nadamw"},
		{from: "nadamw", to: "adamc", steps: 7, wantNoted: "nadamw→adamc"},
		{from: "adamc", to: "adamw", steps: 7, wantNoted: "adamc→adamw"},
		{from: "muon", to: "muon", steps: 7},
		{from: "", to: "adamw", steps: 7},
	}
	for _, c := range cases {
		oc := optim.DefaultConfig()
		oc.Name = c.to
		o, err := optim.NewAdamW(oc, n, spans)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			o.M[i], o.V[i] = float32(i+1), float32(i+2)
		}
		if c.from == "muon" { // Muon leaves its matrices' V at zero
			clear(o.V[6:12])
		}
		v0 := slices.Clone(o.V)
		o.Steps = 7
		tr := &trainer{o: Options{Optim: oc}, opt: o, log: slog.New(slog.DiscardHandler)}
		got := tr.swapOptimizer("ck", checkpoint.State{Optimizer: c.from, Step: 7})
		if got != c.wantNoted {
			t.Errorf("%s→%s: swap %q, want %q", c.from, c.to, got, c.wantNoted)
		}
		for _, sp := range spans {
			m, v := o.M[sp.Offset:sp.Offset+sp.Size], o.V[sp.Offset:sp.Offset+sp.Size]
			mz := !slices.ContainsFunc(m, func(x float32) bool { return x != 0 })
			vz := !slices.ContainsFunc(v, func(x float32) bool { return x != 0 })
			if mz != slices.Contains(c.freshM, sp.Name) {
				t.Errorf("%s→%s: %s M zero %v, want %v", c.from, c.to, sp.Name, mz, !mz)
			}
			if wantV := slices.Contains(c.freshV, sp.Name); wantV != vz && !slices.Equal(v, v0[sp.Offset:sp.Offset+sp.Size]) {
				t.Errorf("%s→%s: %s V %v, want kept or zeroed (%v)", c.from, c.to, sp.Name, v, wantV)
			} else if wantV && !vz {
				t.Errorf("%s→%s: %s V kept, want zero", c.from, c.to, sp.Name)
			}
		}
		if o.Steps != c.steps || o.RebaseUpdateNorms != c.rebase {
			t.Errorf("%s→%s: step count %d, rebase %v; want %d, %v", c.from, c.to, o.Steps, o.RebaseUpdateNorms, c.steps, c.rebase)
		}
	}
}

// swapRun is a run trained 12 steps with from, cut back to its checkpoint
// at step 4 and continued under to (what kestrel rewind --set optim.name
// and kestrel branch --set do), optionally crashing at step 10 and
// resuming from the post-swap checkpoint at 8.
func swapRun(t *testing.T, src, dir, to string, crash bool) {
	t.Helper()
	copyDir(t, src, dir)
	for _, s := range []int{8, 12} {
		if err := os.RemoveAll(filepath.Join(dir, "checkpoints", checkpoint.Name(s))); err != nil {
			t.Fatal(err)
		}
	}
	o := baseOpts(dir)
	o.Optim.Name = to
	if crash {
		o.Observers = []Observer{stopAt{step: 10}}
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "simulated crash") {
			t.Fatalf("want crash, got %v", err)
		}
		o.Observers = nil
	}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

// TestOptimizerSwapResumeBitExact: a run's checkpoint at step 4 is
// continued under another optimizer. The swap is recorded in the
// manifest's start, the checkpoints after it carry the new optimizer's
// state, the losses after it differ from the old optimizer's, the first
// step after a swap across Muon is not update-clipped (the window was
// rebased, not emptied: its threshold is in force), and a run that crashes
// after the swap and resumes from its post-swap checkpoint matches the
// uninterrupted post-swap run bit for bit (losses, weights, optimizer
// state, EMA).
func TestOptimizerSwapResumeBitExact(t *testing.T) {
	for _, c := range []struct{ from, to string }{{"adamw", "muon"}, {"muon", "adamw"}, {"adamw", "nadamw"}} {
		t.Run(c.from+"→"+c.to, func(t *testing.T) {
			root := t.TempDir()
			src := filepath.Join(root, "src")
			so := baseOpts(src)
			so.Optim.Name = c.from
			if _, err := Run(context.Background(), so); err != nil {
				t.Fatal(err)
			}
			ref, crashed := filepath.Join(root, "ref"), filepath.Join(root, "crashed")
			swapRun(t, src, ref, c.to, false)
			swapRun(t, src, crashed, c.to, true)

			before, after := lossSeq(t, src), lossSeq(t, ref)
			if !slices.Equal(before[:4], after[:4]) || slices.Equal(before[4:], after[4:]) {
				t.Errorf("losses: %s %v, swapped at 4 to %s %v: want the first 4 equal, the rest not", c.from, before, c.to, after)
			}
			if got := lossSeq(t, crashed); !slices.Equal(got, after) {
				t.Errorf("losses after the resume differ from the uninterrupted swap:\n got %v\nwant %v", got, after)
			}
			a, b := filepath.Join(ref, "checkpoints", checkpoint.Name(12)), filepath.Join(crashed, "checkpoints", checkpoint.Name(12))
			for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile, checkpoint.StateFile} {
				if f != checkpoint.StateFile && fileSum(t, a, f) != fileSum(t, b, f) {
					t.Errorf("%s differs between the uninterrupted and the resumed swap", f)
				}
			}
			l, err := checkpoint.Load(filepath.Join(ref, "checkpoints", checkpoint.Name(8)))
			if err != nil {
				t.Fatal(err)
			}
			if checkpoint.OptimizerName(l.State.Optimizer) != c.to || l.State.UpdateNormsRebase {
				t.Errorf("checkpoint at 8: optimizer %q, rebase pending %v; want %s, false", l.State.Optimizer, l.State.UpdateNormsRebase, c.to)
			}
			man, err := runlog.ReadManifest(ref)
			if err != nil {
				t.Fatal(err)
			}
			want := c.from + "→" + c.to + " at step 4"
			if last := man.Starts[len(man.Starts)-1]; last.OptimizerSwap != want || last.Step != 4 {
				t.Errorf("manifest's last start %+v, want optimizer_swap %q", last, want)
			}
			if first := readLines(t, ref)[4]; string(first["clipped"]) != "false" || first["update_clip_threshold"] == nil {
				t.Errorf("step 5 (first after the swap): clipped %s, threshold %s: want not clipped, a threshold in force", first["clipped"], first["update_clip_threshold"])
			}
			var thr float64
			json.Unmarshal(readLines(t, ref)[4]["update_clip_threshold"], &thr)
			t.Logf("%s→%s: step 5 update norm %s, threshold %.4g", c.from, c.to, readLines(t, ref)[4]["update_norm"], thr)
		})
	}
}

// TestWarmStartSwapsOptimizer: a warm-start that takes the optimizer state
// (init.mode = weights+optimizer) from a Muon checkpoint into an AdamW run
// swaps it (it was refused before swaps existed) and records it.
func TestWarmStartSwapsOptimizer(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	so := baseOpts(src)
	so.Optim.Name, so.Train.Steps = "muon", 4
	if _, err := Run(context.Background(), so); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, "dst")
	o := baseOpts(dst)
	o.Train.Steps = 3
	o.Init.From, o.Init.Mode = filepath.Join(src, "checkpoints", checkpoint.Name(4)), "weights+optimizer"
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	man, err := runlog.ReadManifest(dst)
	if err != nil {
		t.Fatal(err)
	}
	if got := man.Starts[0].OptimizerSwap; got != "muon→adamw at step 0" {
		t.Errorf("manifest start's optimizer_swap %q, want muon→adamw at step 0", got)
	}
}

// TestKnobOptimizerSwap: an [[optim.knobs]] entry with name = "nadamw" at
// step 7 swaps AdamW for NAdamW there (they share their state): the
// losses up to it are AdamW's, the ones after differ; the checkpoint at 8
// records nadamw; a crash at 10 and a resume from 8 match the
// uninterrupted run bit for bit, and the resume is no swap.
func TestKnobOptimizerSwap(t *testing.T) {
	root := t.TempDir()
	plain := filepath.Join(root, "plain")
	if _, err := Run(context.Background(), baseOpts(plain)); err != nil {
		t.Fatal(err)
	}
	name := "nadamw"
	opts := func(dir string) Options {
		o := baseOpts(dir)
		o.Optim.Knobs = []optim.KnobStep{{Step: 7, Name: &name}}
		return o
	}
	ref := filepath.Join(root, "ref")
	if _, err := Run(context.Background(), opts(ref)); err != nil {
		t.Fatal(err)
	}
	a, b := lossSeq(t, plain), lossSeq(t, ref)
	if !slices.Equal(a[:7], b[:7]) || slices.Equal(a[7:], b[7:]) {
		t.Errorf("losses: adamw %v, nadamw from step 7 %v: want the first 7 equal, the rest not", a, b)
	}
	dir := filepath.Join(root, "crashed")
	o := opts(dir)
	o.Observers = []Observer{stopAt{step: 10}}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want crash, got %v", err)
	}
	if _, err := Run(context.Background(), opts(dir)); err != nil {
		t.Fatal(err)
	}
	if got := lossSeq(t, dir); !slices.Equal(got, b) {
		t.Errorf("losses after the resume differ:\n got %v\nwant %v", got, b)
	}
	for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile} {
		if fileSum(t, filepath.Join(ref, "checkpoints", checkpoint.Name(12)), f) != fileSum(t, filepath.Join(dir, "checkpoints", checkpoint.Name(12)), f) {
			t.Errorf("%s differs between the uninterrupted and the resumed run", f)
		}
	}
	l, err := checkpoint.Load(filepath.Join(ref, "checkpoints", checkpoint.Name(8)))
	if err != nil {
		t.Fatal(err)
	}
	if l.State.Optimizer != "nadamw" {
		t.Errorf("checkpoint at 8 records optimizer %q, want nadamw", l.State.Optimizer)
	}
	man, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range man.Starts {
		if s.OptimizerSwap != "" {
			t.Errorf("start %+v records a swap: the knob's optimizer was in force at the checkpoint", s)
		}
	}
}
