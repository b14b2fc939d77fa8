package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// tinyConfig has every option on: GQA, QK-Norm, tied embeddings, RNoPE,
// document masking and z-loss.
func tinyConfig() Config {
	return Config{
		Vocab: 11, DModel: 16, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 24,
		SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, Tied: true,
		NoPEEvery: 2, ZLoss: 1e-2, InitStd: 0.3, DocMask: true,
	}
}

func tinyBatch(cfg Config, B, T int, seed uint64) *Batch {
	r := rand.New(rand.NewPCG(seed, 7))
	b := &Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T),
		Mask: make([]float32, B*T), SegIDs: make([]int32, B*T)}
	for i := range b.Inputs {
		b.Inputs[i] = int32(r.IntN(cfg.Vocab))
		b.Targets[i] = int32(r.IntN(cfg.Vocab))
		b.Mask[i] = 1
		b.SegIDs[i] = int32(i%T) / 3 // documents of 3 tokens
	}
	b.Mask[1] = 0
	b.Mask[2] = 0.5
	b.Targets[3] = -1
	return b
}

func objective(t *testing.T, m *Model, b *Batch) float64 {
	st, err := m.Forward(b)
	if err != nil {
		t.Fatal(err)
	}
	return st.Loss + st.ZLoss
}

// TestModelGradFD checks ∂objective/∂θ of a 2-layer model with every option
// on against float32 central differences for a sample of every tensor.
func TestModelGradFD(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"all-options", func(*Config) {}},
		{"plain", func(c *Config) {
			c.QKNorm, c.Tied, c.NoPEEvery, c.ZLoss, c.DocMask, c.NKVHeads = false, false, 0, 0, false, 4
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			tc.mod(&cfg)
			m, err := New(cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			b := tinyBatch(cfg, 2, 7, 3)
			m.ZeroGrads()
			if _, err := m.ForwardBackward(b, 1); err != nil {
				t.Fatal(err)
			}
			grad := append([]float32(nil), m.Grads...)
			r := rand.New(rand.NewPCG(5, 5))
			const h = 1e-2
			bad := 0
			for _, tn := range m.Tensors() {
				// the largest-gradient entry plus a few random ones
				idx := []int{}
				best := 0
				for i := 0; i < tn.Size; i++ {
					if math.Abs(float64(grad[tn.Offset+i])) > math.Abs(float64(grad[tn.Offset+best])) {
						best = i
					}
				}
				idx = append(idx, best)
				for k := 0; k < 4; k++ {
					idx = append(idx, r.IntN(tn.Size))
				}
				for _, i := range idx {
					p := tn.Offset + i
					old := m.Params[p]
					m.Params[p] = old + h
					lp := objective(t, m, b)
					m.Params[p] = old - h
					lm := objective(t, m, b)
					m.Params[p] = old
					num := (lp - lm) / (2 * h)
					ana := float64(grad[p])
					if math.Abs(num-ana) > 3e-2*math.Abs(ana)+3e-4 {
						bad++
						t.Errorf("%s[%d]: analytic %.6g numeric %.6g", tn.Name, i, ana, num)
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d gradient mismatches", bad)
			}
		})
	}
}

func TestTensorNamesAndCount(t *testing.T) {
	cfg := Config{Vocab: 8192, DModel: 256, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 768,
		SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	m, err := New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	// ref7m: 2·V·D + L·(4·D² + 3·D·F + 2·D) + D
	want := 2*8192*256 + 4*(4*256*256+3*256*768+2*256) + 256
	if m.NumParams() != want {
		t.Fatalf("NumParams %d want %d", m.NumParams(), want)
	}
	for _, name := range []string{"model.embed_tokens.weight", "model.layers.3.self_attn.k_proj.weight",
		"model.layers.0.mlp.down_proj.weight", "model.norm.weight", "lm_head.weight"} {
		if _, ok := m.Tensor(name); !ok {
			t.Errorf("missing tensor %s", name)
		}
	}
	off := 0
	for _, tn := range m.Tensors() {
		if tn.Offset != off {
			t.Fatalf("%s offset %d want %d", tn.Name, tn.Offset, off)
		}
		off += tn.Size
	}
	tied := tinyConfig()
	mt, _ := New(tied, 1)
	if _, ok := mt.Tensor("lm_head.weight"); ok {
		t.Error("tied model has lm_head.weight")
	}
	if _, ok := mt.Tensor("model.layers.1.self_attn.q_norm.weight"); !ok {
		t.Error("qk_norm model lacks q_norm")
	}
}

func TestInitStatistics(t *testing.T) {
	cfg := DefaultConfig()
	m, _ := New(cfg, 42)
	m2, _ := New(cfg, 42)
	for i := range m.Params {
		if m.Params[i] != m2.Params[i] {
			t.Fatal("init not deterministic")
		}
	}
	for _, tn := range m.Tensors() {
		v := m.Params[tn.Offset : tn.Offset+tn.Size]
		var ss float64
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		std := math.Sqrt(ss / float64(len(v)))
		want := cfg.InitStd * 0.986 // truncation at 3σ shrinks σ by ~1.4%
		switch {
		case tn.Kind == "norm":
			want = 1
		case strings.HasSuffix(tn.Name, "o_proj.weight"), strings.HasSuffix(tn.Name, "down_proj.weight"):
			want /= math.Sqrt(2 * float64(cfg.NLayers))
		}
		if math.Abs(std-want) > 0.05*want {
			t.Errorf("%s: rms %.5f want %.5f", tn.Name, std, want)
		}
	}
}

func TestAccumulateAndForwardKeepsGrads(t *testing.T) {
	cfg := tinyConfig()
	m, _ := New(cfg, 9)
	b := tinyBatch(cfg, 3, 8, 1)
	m.ZeroGrads()
	st1, _ := m.ForwardBackward(b, 1)
	g1 := append([]float32(nil), m.Grads...)
	m.ZeroGrads()
	m.ForwardBackward(b, 0.5)
	if _, err := m.Forward(tinyBatch(cfg, 1, 5, 2)); err != nil {
		t.Fatal(err)
	}
	st2, _ := m.ForwardBackward(b, 0.5)
	st1.ForwardTime, st1.BackwardTime, st2.ForwardTime, st2.BackwardTime = 0, 0, 0, 0 // timings differ
	if st1 != st2 {
		t.Fatalf("stats differ: %+v vs %+v", st1, st2)
	}
	for i := range g1 {
		if d := math.Abs(float64(g1[i] - m.Grads[i])); d > 1e-6+1e-5*math.Abs(float64(g1[i])) {
			t.Fatalf("grad[%d] %g vs accumulated %g", i, g1[i], m.Grads[i])
		}
	}
	if st1.Tokens != 3*8-2 {
		t.Errorf("Tokens %d want %d", st1.Tokens, 3*8-2)
	}
}

func TestLogitsMatchesForward(t *testing.T) {
	cfg := tinyConfig()
	cfg.DocMask = false
	m, _ := New(cfg, 4)
	b := tinyBatch(cfg, 1, 6, 8)
	b.SegIDs, b.Mask = nil, nil
	b.Targets[3] = 0
	if _, err := m.Forward(b); err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), m.a.logits[5*cfg.Vocab:6*cfg.Vocab]...)
	got := make([]float32, cfg.Vocab)
	if err := m.Logits(b.Inputs, got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Fatalf("logit %d: %g vs %g", i, got[i], want[i])
		}
	}
}

func TestBadInput(t *testing.T) {
	cfg := tinyConfig()
	m, _ := New(cfg, 1)
	b := tinyBatch(cfg, 1, 4, 1)
	cases := []struct {
		mut  func(*Batch)
		want string
	}{
		{func(b *Batch) { b.Inputs[2] = 99 }, "Inputs[2]=99"},
		{func(b *Batch) { b.Targets[1] = 11 }, "Targets[1]=11"},
		{func(b *Batch) { b.T = 9; b.B = 1 }, "seq_len"},
		{func(b *Batch) { b.Mask = b.Mask[:2] }, "Mask"},
		{func(b *Batch) { b.SegIDs = b.SegIDs[:1] }, "SegIDs"},
	}
	for _, c := range cases {
		bb := *b
		bb.Inputs = append([]int32(nil), b.Inputs...)
		bb.Targets = append([]int32(nil), b.Targets...)
		c.mut(&bb)
		_, err := m.ForwardBackward(&bb, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error containing %q, got %v", c.want, err)
		}
	}
	if err := m.Logits(nil, make([]float32, cfg.Vocab)); err == nil {
		t.Error("empty context accepted")
	}
	bad := cfg
	bad.NKVHeads = 3
	if _, err := New(bad, 1); err == nil || !strings.Contains(err.Error(), "n_kv_heads") {
		t.Errorf("bad config: %v", err)
	}
}

func TestZeroAllocsPerStep(t *testing.T) {
	for _, cfg := range []Config{tinyConfig(), moeConfig()} {
		zeroAllocs(t, cfg)
	}
}

func zeroAllocs(t *testing.T, cfg Config) {
	m, _ := New(cfg, 1)
	b := tinyBatch(cfg, 2, 8, 1)
	small := tinyBatch(cfg, 1, 8, 2)
	m.ForwardBackward(b, 1)
	allocs := testing.AllocsPerRun(5, func() {
		m.ZeroGrads()
		m.ForwardBackward(b, 0.5)
		m.ForwardBackward(small, 0.5)
		m.Forward(small)
		_ = m.Vitals()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per step, want 0", allocs)
	}
}

// TestArenaLinearInBT shows the activation arena grows linearly in B for a
// fixed model: arena(4B) − arena(2B) = 2·(arena(2B) − arena(B)).
func TestArenaLinearInBT(t *testing.T) {
	cfg := tinyConfig()
	sizes := []int{}
	for _, B := range []int{1, 2, 4} {
		m, _ := New(cfg, 1)
		if _, err := m.Forward(tinyBatch(cfg, B, 8, 1)); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, m.ArenaBytes())
		t.Logf("B=%d T=%d arena %d bytes", B, cfg.SeqLen, m.ArenaBytes())
	}
	d1, d2 := sizes[1]-sizes[0], sizes[2]-sizes[1]
	if d2 != 2*d1 {
		t.Fatalf("arena not linear in B: %v", sizes)
	}
}

// TestResidVitals checks the residual stream's RMS and outlier rate (the
// parallel, chunked sums) against a plain sequential computation, on 1 and
// 2 threads, for lengths that do and do not split evenly into the chunks.
func TestResidVitals(t *testing.T) {
	m, _ := New(tinyConfig(), 1)
	defer kernels.SetThreads(kernels.Threads())
	for _, n := range []int{1, 7, 16, 1003, 4096} {
		r := rand.New(rand.NewPCG(uint64(n), 5))
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64()) + 0.25
		}
		x[n/2] = 40 // an outlier (beyond 6 standard deviations once n is large)
		var s, ss float64
		for _, v := range x {
			s += float64(v)
			ss += float64(v) * float64(v)
		}
		mean := s / float64(n)
		sd := math.Sqrt(math.Max(ss/float64(n)-mean*mean, 0))
		lo, hi := float32(mean-6*sd), float32(mean+6*sd)
		cnt := 0
		for _, v := range x {
			if v < lo || v > hi {
				cnt++
			}
		}
		wantRMS := math.Sqrt(ss / float64(n))
		wantRate := float64(cnt) / float64(n)
		for _, th := range []int{1, 2} {
			kernels.SetThreads(th)
			m.residVitals(0, x)
			got := m.vit.ResidualRMS[0]
			if math.Abs(float64(got)-wantRMS) > 1e-6*wantRMS {
				t.Errorf("n=%d threads=%d: rms %g, want %g", n, th, got, wantRMS)
			}
			if rate := m.vit.ActivationOutlierRate[0]; rate != float32(wantRate) {
				t.Errorf("n=%d threads=%d: outlier rate %g, want %g", n, th, rate, wantRate)
			}
		}
	}
}

func TestVitals(t *testing.T) {
	cfg := tinyConfig()
	m, _ := New(cfg, 1)
	if _, err := m.ForwardBackward(tinyBatch(cfg, 2, 8, 1), 1); err != nil {
		t.Fatal(err)
	}
	v := m.Vitals()
	for l := 0; l < cfg.NLayers; l++ {
		for h := 0; h < cfg.NHeads; h++ {
			// documents of 3 tokens: entropy ≤ log 3
			if e := v.AttnEntropy[l][h]; !(e >= 0 && e <= float32(math.Log(3))+1e-5) {
				t.Errorf("entropy[%d][%d]=%g", l, h, e)
			}
			if x := v.MaxAttnLogit[l][h]; math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
				t.Errorf("max logit[%d][%d]=%g", l, h, x)
			}
		}
		if v.ResidualRMS[l] <= 0 || v.ActivationOutlierRate[l] < 0 || v.ActivationOutlierRate[l] > 1 {
			t.Errorf("layer %d rms %g outliers %g", l, v.ResidualRMS[l], v.ActivationOutlierRate[l])
		}
	}
	if v.LogitLSEMean <= 0 {
		t.Errorf("lse mean %g", v.LogitLSEMean)
	}
}

// TestZeroAllocsPerStepParallel repeats the allocation check at a size
// where the GEMMs and row loops run on the worker pool.
func TestZeroAllocsPerStepParallel(t *testing.T) {
	cfg := Config{Vocab: 512, DModel: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 160,
		SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02, QKNorm: true, NoPEEvery: 2, ZLoss: 1e-4, DocMask: true}
	m, err := New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := tinyBatch(cfg, 4, 64, 1)
	// Warm-up: the GEMM package grows a context (and its packing buffers)
	// the first time it sees a given number of concurrent callers.
	for i := 0; i < 3; i++ {
		m.ForwardBackward(b, 1)
	}
	allocs := testing.AllocsPerRun(3, func() {
		m.ZeroGrads()
		m.ForwardBackward(b, 1)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per step, want 0", allocs)
	}
}
