package train

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/stepvitals"
)

func TestRowEntropyTopK(t *testing.T) {
	lseOf := func(z []float32) float32 {
		var s float64
		for _, v := range z {
			s += math.Exp(float64(v))
		}
		return float32(math.Log(s))
	}
	uniform := make([]float32, 100)
	peaked := make([]float32, 50)
	for i := range peaked {
		peaked[i] = float32(i%7) * 0.9
	}
	peaked[17] = 8
	for _, tc := range []struct {
		name string
		z    []float32
	}{{"uniform", uniform}, {"peaked", peaked}} {
		t.Run(tc.name, func(t *testing.T) {
			lse := lseOf(tc.z)
			// Direct: entropy −Σ p log p; top-k mass from a sorted copy.
			var ent float64
			ps := make([]float64, len(tc.z))
			for i, v := range tc.z {
				p := math.Exp(float64(v - lse))
				ps[i] = p
				ent -= p * math.Log(p)
			}
			for i := range ps { // selection sort descending, enough for a test
				for j := i + 1; j < len(ps); j++ {
					if ps[j] > ps[i] {
						ps[i], ps[j] = ps[j], ps[i]
					}
				}
			}
			var mass float64
			for _, p := range ps[:probeTopK] {
				mass += p
			}
			gotE, gotM := stepvitals.EntropyTopK(tc.z, lse, make([]float32, probeTopK))
			if math.Abs(gotE-ent) > 1e-5 || math.Abs(gotM-mass) > 1e-6 {
				t.Fatalf("entropy %v, top-%d mass %v; want %v, %v", gotE, probeTopK, gotM, ent, mass)
			}
		})
	}
	if e, m := stepvitals.EntropyTopK(uniform, lseOf(uniform), make([]float32, probeTopK)); math.Abs(e-math.Log(100)) > 1e-5 || math.Abs(m-0.1) > 1e-6 {
		t.Fatalf("uniform over 100: entropy %v (want ln 100), top-10 mass %v (want 0.1)", e, m)
	}
}

// metricLines returns every line of metrics.jsonl that has key.
func metricLines(t *testing.T, dir, key string) []map[string]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]float64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw[key]; !ok {
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

// probeLogP loads a checkpoint's weights and returns the float64
// log-softmax of its outputs on the probe batch at the counted positions,
// and the mean loss there.
func probeLogP(t *testing.T, ckpt string, p *probeBatch) ([][]float64, float64) {
	t.Helper()
	m, _, err := LoadModel(ckpt, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return modelLogP(t, m, p)
}

func modelLogP(t *testing.T, m *model.Model, p *probeBatch) ([][]float64, float64) {
	t.Helper()
	V := m.Cfg.Vocab
	var out [][]float64
	var loss float64
	for i, y := range p.Targets {
		if y < 0 {
			continue
		}
		seq, pos := i/p.T, i%p.T
		z := make([]float32, V)
		if err := m.Logits(p.Inputs[seq*p.T:seq*p.T+pos+1], z); err != nil {
			t.Fatal(err)
		}
		mx := math.Inf(-1)
		for _, v := range z {
			mx = math.Max(mx, float64(v))
		}
		var s float64
		for _, v := range z {
			s += math.Exp(float64(v) - mx)
		}
		lse := mx + math.Log(s)
		row := make([]float64, V)
		for v := range z {
			row[v] = float64(z[v]) - lse
		}
		out = append(out, row)
		loss -= row[y]
	}
	return out, loss / float64(len(out))
}

func readProbe(t *testing.T, dir string) *probeBatch {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ProbeFile))
	if err != nil {
		t.Fatal(err)
	}
	p := &probeBatch{}
	if err := json.Unmarshal(b, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProbes: the frozen probe batch is written once with its hash in the
// manifest; every evaluation reports fixed_probe_loss, logit_entropy_probe
// and topk_mass_probe; every checkpoint reports output_kl_to_prev. The
// numbers agree with an independent computation from the checkpoints, and a
// crash and resume reproduce them.
func TestProbes(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	if _, err := Run(context.Background(), baseOpts(ref)); err != nil {
		t.Fatal(err)
	}
	p := readProbe(t, ref)
	if p.B != 4 || p.T != 32 || p.SHA256 != p.hash() {
		t.Fatalf("probe batch: %d×%d, sha %s vs %s", p.B, p.T, p.SHA256, p.hash())
	}
	var man map[string]any
	if b, err := os.ReadFile(filepath.Join(ref, "manifest.json")); err != nil || json.Unmarshal(b, &man) != nil {
		t.Fatalf("manifest: %v", err)
	}
	if man["probe_hash"] != p.SHA256 {
		t.Errorf("manifest probe_hash %v, probe.json %s", man["probe_hash"], p.SHA256)
	}

	evals := metricLines(t, ref, "val_loss")
	if len(evals) != 2 { // steps 6 and 12
		t.Fatalf("%d eval lines", len(evals))
	}
	for _, e := range evals {
		if l := e["fixed_probe_loss"]; !(l > 0 && l < 10) {
			t.Errorf("step %v: fixed_probe_loss %v", e["step"], l)
		}
		if h := e["logit_entropy_probe"]; !(h > 0 && h <= math.Log(256)+1e-6) {
			t.Errorf("step %v: logit_entropy_probe %v", e["step"], h)
		}
		if m := e["topk_mass_probe"]; !(m > 0 && m <= 1) {
			t.Errorf("step %v: topk_mass_probe %v", e["step"], m)
		}
	}
	ck := func(dir string, step int) string { return filepath.Join(dir, "checkpoints", checkpoint.Name(step)) }
	// The final evaluation ran on the weights of the final checkpoint.
	lp12, loss12 := probeLogP(t, ck(ref, 12), p)
	if got := evals[1]["fixed_probe_loss"]; math.Abs(got-loss12) > 1e-4 {
		t.Errorf("fixed_probe_loss at step 12 = %v, recomputed from the checkpoint %v", got, loss12)
	}

	kls := metricLines(t, ref, "output_kl_to_prev")
	if len(kls) != 3 || kls[0]["step"] != 4 || kls[2]["step"] != 12 {
		t.Fatalf("output_kl_to_prev lines %v, want steps 4, 8, 12", kls)
	}
	kl := func(a, b [][]float64) float64 { // mean KL(a ‖ b)
		var s float64
		for i := range a {
			for v := range a[i] {
				s += math.Exp(a[i][v]) * (a[i][v] - b[i][v])
			}
		}
		return s / float64(len(a))
	}
	lp8, _ := probeLogP(t, ck(ref, 8), p)
	if got, want := kls[2]["output_kl_to_prev"], kl(lp12, lp8); !(want > 0) || math.Abs(got-want) > 1e-3*want {
		t.Errorf("output_kl_to_prev at step 12 = %v, recomputed KL(ckpt 12 ‖ ckpt 8) %v", got, want)
	}
	// The first checkpoint compares with the initial weights; the outputs
	// move far enough there that KL's direction matters.
	init, err := model.New(tinyModel(), 42)
	if err != nil {
		t.Fatal(err)
	}
	lp0, _ := modelLogP(t, init, p)
	lp4, _ := probeLogP(t, ck(ref, 4), p)
	want, reverse := kl(lp4, lp0), kl(lp0, lp4)
	t.Logf("output_kl_to_prev at step 4: logged %v, KL(now ‖ init) %v, KL(init ‖ now) %v", kls[0]["output_kl_to_prev"], want, reverse)
	if got := kls[0]["output_kl_to_prev"]; math.Abs(got-want) > 1e-3*want || math.Abs(got-reverse) < 1e-3*want {
		t.Errorf("output_kl_to_prev at step 4 = %v, want KL(ckpt 4 ‖ init) %v (reverse %v)", got, want, reverse)
	}

	// Crash at step 10, resume from the checkpoint at 8: same probe batch,
	// same probe numbers.
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Observers = []Observer{stopAt{step: 10}}
	if _, err := Run(context.Background(), o); err == nil {
		t.Fatal("want the simulated crash")
	}
	if _, err := Run(context.Background(), baseOpts(dir)); err != nil {
		t.Fatal(err)
	}
	if q := readProbe(t, dir); q.SHA256 != p.SHA256 {
		t.Errorf("resumed run's probe batch %s differs from the uninterrupted run's %s", q.SHA256, p.SHA256)
	}
	if got, want := metricLines(t, dir, "output_kl_to_prev"), kls; len(got) != 3 || got[2]["output_kl_to_prev"] != want[2]["output_kl_to_prev"] {
		t.Errorf("after resume output_kl_to_prev %v, uninterrupted %v", got, want)
	}
	if got := metricLines(t, dir, "val_loss"); len(got) != 2 || got[1]["fixed_probe_loss"] != evals[1]["fixed_probe_loss"] {
		t.Errorf("after resume eval lines %v, uninterrupted %v", got, evals)
	}
}

// TestProbeFileChanged: a probe.json that no longer matches its hash is
// refused with an error naming the file, and the run's checkpoints are left
// alone.
func TestProbeFileChanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps = 4
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ProbeFile)
	p := readProbe(t, dir)
	p.Inputs[0] = (p.Inputs[0] + 1) % 256
	b, _ := json.Marshal(p)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := fileSum(t, filepath.Join(dir, "checkpoints", checkpoint.Name(4)), checkpoint.ModelFile)
	o = baseOpts(dir)
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("changed probe.json: %v", err)
	}
	if after := fileSum(t, filepath.Join(dir, "checkpoints", checkpoint.Name(4)), checkpoint.ModelFile); after != before {
		t.Error("the checkpoint changed")
	}

	// train.probe_sequences = 0 turns probes off: no file, no probe fields.
	off := filepath.Join(t.TempDir(), "off")
	o = baseOpts(off)
	o.Train.ProbeSequences, o.Train.Steps = 0, 6
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(off, ProbeFile)); !os.IsNotExist(err) {
		t.Errorf("probe.json written with probes off: %v", err)
	}
	if n := len(metricLines(t, off, "fixed_probe_loss")) + len(metricLines(t, off, "output_kl_to_prev")); n != 0 {
		t.Errorf("%d probe lines with probes off", n)
	}
}

// TestUpdateClipThresholdAbsentWhileInactive: before the update-norm window
// has its minimum entries the threshold is left out of the step line (a
// chart then starts where clipping starts, instead of at a fake 0).
func TestUpdateClipThresholdAbsentWhileInactive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir) // update clipping active after 3 entries
	o.Train.Steps = 6
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, dir)
	active := 0
	for _, l := range lines {
		var step int
		json.Unmarshal(l["step"], &step)
		thr, ok := l["update_clip_threshold"]
		switch {
		case step <= 3 && ok:
			t.Errorf("step %d: update_clip_threshold %s while clipping is inactive", step, thr)
		case step > 3 && !ok && string(l["skipped"]) != "true": // a skipped step computes no update
			t.Errorf("step %d: no update_clip_threshold once clipping is active", step)
		case ok:
			active++
		}
	}
	if active == 0 {
		t.Error("no step reported an active threshold")
	}
}
