package train

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestQKClipMetric: with optim.qk_clip_tau set, every step line carries
// qk_clipped_heads, equal to the number of heads whose max_attn_logit
// (one micro-batch per step, so the logged per-head values are the ones
// QK-Clip saw) exceeded τ, and 0 on a skipped step; with τ = 0 the field
// is left out.
func TestQKClipMetric(t *testing.T) {
	for _, tau := range []float64{0, 0.08} {
		dir := filepath.Join(t.TempDir(), "run")
		o := baseOpts(dir)
		o.Train.Steps = 8
		o.Optim.QKClipTau = tau
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, l := range readLines(t, dir) {
			raw, ok := l["qk_clipped_heads"]
			if tau == 0 {
				if ok {
					t.Fatalf("τ=0: qk_clipped_heads %s in a step line", raw)
				}
				continue
			}
			if !ok {
				t.Fatalf("step %s: no qk_clipped_heads", l["step"])
			}
			var got int
			json.Unmarshal(raw, &got)
			want := 0
			for k, v := range l {
				var x float64
				if strings.HasPrefix(k, "max_attn_logit/layer") && strings.Contains(k, "/head") && json.Unmarshal(v, &x) == nil && x > tau {
					want++
				}
			}
			if string(l["skipped"]) == "true" {
				want = 0
			}
			if got != want {
				t.Errorf("step %s: qk_clipped_heads %d, want %d", l["step"], got, want)
			}
			var loss float64
			if json.Unmarshal(l["train_loss_raw"], &loss); math.IsNaN(loss) || math.IsInf(loss, 0) {
				t.Errorf("step %s: loss %s", l["step"], l["train_loss_raw"])
			}
			total += got
		}
		if tau > 0 && total == 0 {
			t.Errorf("τ=%g: no head clipped in the run", tau)
		}
	}
}

// TestQKClipperMaxOverMicroBatches: the logit QK-Clip compares with τ is
// the max over the step's forward passes, not the last pass's.
func TestQKClipperMaxOverMicroBatches(t *testing.T) {
	cfg := tinyModel()
	m, err := model.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	q, err := newQKClipper(10, cfg, m.Tensors())
	if err != nil {
		t.Fatal(err)
	}
	q.observe(&model.Vitals{MaxAttnLogit: [][]float32{{50, 1}}}) // first micro-batch: head 0 over τ
	q.observe(&model.Vitals{MaxAttnLogit: [][]float32{{2, 3}}})  // last micro-batch: none
	p0 := append([]float32(nil), m.Params...)
	var st runlog.Step
	if err := q.apply(m.Params, false, &st); err != nil {
		t.Fatal(err)
	}
	if st.QKClippedHeads == nil || *st.QKClippedHeads != 1 {
		t.Fatalf("qk_clipped_heads %v, want 1", st.QKClippedHeads)
	}
	x, _ := m.Tensor("model.layers.0.self_attn.q_proj.weight")
	hd := cfg.DModel / cfg.NHeads
	i := x.Offset // head 0, first value
	if got, want := m.Params[i], p0[i]*float32(math.Sqrt(10.0/50)); math.Abs(float64(got-want)) > 1e-6*math.Abs(float64(want)) {
		t.Errorf("q_proj head 0: %g, want %g", got, want)
	}
	if j := x.Offset + hd*cfg.DModel; m.Params[j] != p0[j] {
		t.Error("q_proj head 1 changed")
	}
	// The next step starts afresh; a skipped step clips nothing.
	q.observe(&model.Vitals{MaxAttnLogit: [][]float32{{2, 3}}})
	if err := q.apply(m.Params, false, &st); err != nil || *st.QKClippedHeads != 0 {
		t.Errorf("fresh step: %d clipped, %v", *st.QKClippedHeads, err)
	}
	q.observe(&model.Vitals{MaxAttnLogit: [][]float32{{200, 300}}})
	p1 := append([]float32(nil), m.Params...)
	if err := q.apply(m.Params, true, &st); err != nil || *st.QKClippedHeads != 0 {
		t.Errorf("skipped step: %d clipped, %v", *st.QKClippedHeads, err)
	}
	for i := range p1 {
		if p1[i] != m.Params[i] {
			t.Fatal("a skipped step changed the weights")
		}
	}
	if q, err := newQKClipper(0, cfg, m.Tensors()); q != nil || err != nil {
		t.Errorf("τ=0: %v, %v; want nil, nil", q, err)
	}
}
