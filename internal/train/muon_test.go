package train

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// muonOpts is baseOpts with optim.name = "muon" and QK-Clip on at a low τ,
// so Muon steps, QK-Clip and the update-clip and skip-step windows all act
// within the 12 steps.
func muonOpts(dir string) Options {
	o := baseOpts(dir)
	o.Optim.Name = "muon"
	o.Optim.QKClipTau = 0.04
	return o
}

// TestMuonResumeBitExact trains 12 steps with Muon uninterrupted, then
// crashes a second run at step 10 and resumes it from the checkpoint at
// step 8: losses, weights, optimizer state (the Muon momentum in
// exp_avg) and EMA must match bit for bit. It also checks that Muon is in
// effect (the losses differ from AdamW's) and its vitals are reported.
func TestMuonResumeBitExact(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	if _, err := Run(context.Background(), muonOpts(ref)); err != nil {
		t.Fatal(err)
	}
	want := lossSeq(t, ref)
	if len(want) != 12 {
		t.Fatalf("%d step lines", len(want))
	}
	adam := filepath.Join(t.TempDir(), "adam")
	ao := baseOpts(adam)
	ao.Optim.QKClipTau = 0.04
	if _, err := Run(context.Background(), ao); err != nil {
		t.Fatal(err)
	}
	if a := lossSeq(t, adam); slices.Equal(a[2:], want[2:]) {
		t.Fatal("Muon's losses equal AdamW's: optim.name = \"muon\" changed nothing")
	}
	clipped, skipped := 0, 0
	for _, m := range readLines(t, ref) {
		var n int
		json.Unmarshal(m["qk_clipped_heads"], &n)
		clipped += n
		if string(m["skipped"]) == "true" {
			skipped++
			continue
		}
		for _, k := range []string{"update_norm", "param_norm", "adam_m_norm", "update_to_weight"} {
			var v float64
			if err := json.Unmarshal(m[k], &v); err != nil || !(v > 0) {
				t.Errorf("step %s: %s = %s, want a number > 0", m["step"], k, m[k])
			}
		}
	}

	if clipped == 0 || skipped == 0 {
		t.Errorf("QK-Clip clipped %d heads and skip-step skipped %d steps: the test wants both to act", clipped, skipped)
	}

	dir := filepath.Join(t.TempDir(), "run")
	o2 := muonOpts(dir)
	o2.Observers = []Observer{stopAt{step: 10}}
	if _, err := Run(context.Background(), o2); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want crash, got %v", err)
	}
	res, err := Run(context.Background(), muonOpts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Errorf("result %+v", res)
	}
	if got := lossSeq(t, dir); !slices.Equal(got, want) {
		t.Errorf("losses differ after resume:\n got %v\nwant %v", got, want)
	}
	a, b := filepath.Join(ref, "checkpoints", checkpoint.Name(12)), filepath.Join(dir, "checkpoints", checkpoint.Name(12))
	for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile} {
		if fileSum(t, a, f) != fileSum(t, b, f) {
			t.Errorf("%s differs between the uninterrupted and the resumed run", f)
		}
	}
}
