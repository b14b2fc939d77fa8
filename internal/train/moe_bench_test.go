package train

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/peak"
)

// demoModels are the [model] sections of configs/demo.toml (dense, SwiGLU
// 512) and configs/moe-demo.toml (8 experts of 256, top-2: the same
// active MLP size).
func demoModels() (dense, moe model.Config) {
	dense = model.DefaultConfig()
	dense.Vocab, dense.DModel, dense.NLayers, dense.NHeads, dense.NKVHeads = 8192, 192, 4, 6, 2
	dense.MLPHidden, dense.SeqLen, dense.QKNorm, dense.Tied, dense.ZLoss, dense.DocMask = 512, 256, true, true, 1e-4, true
	moe = dense
	moe.MoEEvery, moe.MoEExperts, moe.MoETopK, moe.MoEExpertHidden = 1, 8, 2, 256
	moe.MoENormTopK, moe.MoECapacityFactor, moe.MoEAuxLossAlpha, moe.MoERouterZLoss = true, 1.5, 0.01, 0.001
	return dense, moe
}

// BenchmarkMoEVsDenseStep times training steps (forward + backward +
// AdamW, batch 16 × 256 random tokens) of the MoE demo model and of the
// dense model of equal active size in alternating pairs (the order flips
// every pair) and reports each one's tokens/s and MFU on active
// parameters (model.FLOPsPerToken) and the MoE/dense tokens/s ratios: of
// the medians, the median of the per-pair ratios (robust to load drifting
// between pairs) and of the process CPU seconds per step (robust to load
// that takes the cores away):
//
//	go test ./internal/train -run '^$' -bench MoEVsDense -benchtime 10x
func BenchmarkMoEVsDenseStep(b *testing.B) {
	dc, mc := demoModels()
	const B = 16
	type side struct {
		m     *model.Model
		adam  *optim.AdamW
		times []float64
		cpu   []float64 // process CPU seconds per step
	}
	mk := func(c model.Config) *side {
		m, err := model.New(c, 1)
		if err != nil {
			b.Fatal(err)
		}
		var spans []optim.Span
		for _, t := range m.Tensors() {
			spans = append(spans, optim.Span{Name: t.Name, Offset: t.Offset, Size: t.Size, Kind: t.Kind})
		}
		adam, err := optim.NewAdamW(optim.DefaultConfig(), len(m.Params), spans)
		if err != nil {
			b.Fatal(err)
		}
		return &side{m: m, adam: adam}
	}
	sides := []*side{mk(dc), mk(mc)}
	r := rand.New(rand.NewPCG(1, 2))
	bt := &model.Batch{B: B, T: dc.SeqLen, Inputs: make([]int32, B*dc.SeqLen), Targets: make([]int32, B*dc.SeqLen)}
	for i := range bt.Inputs {
		bt.Inputs[i], bt.Targets[i] = int32(r.IntN(dc.Vocab)), int32(r.IntN(dc.Vocab))
	}
	step := func(s *side) float64 {
		c0 := kernels.ProcessCPUSeconds()
		defer func() { s.cpu = append(s.cpu, kernels.ProcessCPUSeconds()-c0) }()
		t0 := time.Now()
		s.m.ZeroGrads()
		st, err := s.m.ForwardBackward(bt, 1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.adam.Step(s.m.Params, s.m.Grads, st.Loss, 1e-3); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0).Seconds()
	}
	step(sides[0]) // warm-up: arenas, page faults
	step(sides[1])
	pk := peak.Resolve(peak.Options{Threads: kernels.Threads()})
	sides[0].cpu, sides[1].cpu = nil, nil
	var pair []float64 // MoE step time ÷ dense step time of each pair
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := 0; k < 2; k++ {
			s := sides[(i+k)%2]
			s.times = append(s.times, step(s))
		}
		pair = append(pair, sides[1].times[i]/sides[0].times[i])
	}
	b.StopTimer()
	sort.Float64s(pair)
	med := func(xs []float64) float64 {
		xs = append([]float64(nil), xs...)
		sort.Float64s(xs)
		return xs[len(xs)/2]
	}
	var tps [2]float64
	for k, s := range sides {
		sort.Float64s(s.times)
		tps[k] = float64(B*dc.SeqLen) / s.times[len(s.times)/2]
	}
	b.ReportMetric(tps[0], "dense_tok/s")
	b.ReportMetric(tps[1], "moe_tok/s")
	b.ReportMetric(tps[1]/tps[0], "moe/dense")
	b.ReportMetric(1/pair[len(pair)/2], "moe/dense_pairs") // median over pairs of the tokens/s ratio
	b.ReportMetric(med(sides[0].cpu)/med(sides[1].cpu), "moe/dense_cpu")
	b.ReportMetric(tps[0]*sides[0].m.FLOPsPerToken()/pk.FLOPS(), "dense_mfu")
	b.ReportMetric(tps[1]*sides[1].m.FLOPsPerToken()/pk.FLOPS(), "moe_mfu")
	b.ReportMetric(sides[1].m.FLOPsPerToken()/sides[0].m.FLOPsPerToken(), "flops_ratio")
}
