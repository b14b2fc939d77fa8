package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// headConfig is a small model with a vocabulary that is not a multiple of
// any kernel's nr (ragged column tiles) and enough tokens per batch for
// several head chunks of kc rows.
func headConfig() Config {
	return Config{Vocab: 300, DModel: 32, NLayers: 1, NHeads: 2, NKVHeads: 1, MLPHidden: 48,
		SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.2}
}

// headBatch is B sequences of T tokens with mixed loss weights: zeros,
// fractions and targets < 0.
func headBatch(cfg Config, B, T int, seed uint64, mask bool) *Batch {
	r := rand.New(rand.NewPCG(seed, 11))
	N := B * T
	b := &Batch{B: B, T: T, Inputs: make([]int32, N), Targets: make([]int32, N), SegIDs: make([]int32, N)}
	if mask {
		b.Mask = make([]float32, N)
	}
	for i := range b.Inputs {
		b.Inputs[i] = int32(r.IntN(cfg.Vocab))
		b.Targets[i] = int32(r.IntN(cfg.Vocab))
		b.SegIDs[i] = int32(i%T) / 5
		if r.IntN(9) == 0 {
			b.Targets[i] = -1
		}
		if mask {
			b.Mask[i] = [...]float32{1, 1, 0, 0.25, 2}[r.IntN(5)]
		}
	}
	return b
}

// f32bits compares float32 slices bit for bit (NaN payloads included).
func f32bits(a, b []float32) int {
	if len(a) != len(b) {
		return -2
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestHeadChunksBitIdentical: the training head fused over row chunks
// gives the losses, every gradient and the LogitLSEMean vital of the
// whole-batch head (one chunk of all N rows) bit for bit, on every GEMM
// implementation at 1 and 2 threads: ragged last chunks, chunk requests
// that are not multiples of kc, masks, ignored targets, z-loss, tied and
// untied embeddings, QK-Norm, an MoE model, lm_head packed once per pass
// or (wide d_model) per GEMM, and two micro-batches accumulated into the
// same gradients (scale 1/2 each).
func TestHeadChunksBitIdentical(t *testing.T) {
	type shape struct {
		name string
		cfg  func() Config
		B, T int
		mask bool
		one  bool // only the smallest chunks (a slow shape on the Go kernel)
	}
	shapes := []shape{
		{"untied B21xT64 ragged", headConfig, 21, 64, false, false},
		{"tied z-loss mask B17xT50", func() Config {
			c := headConfig()
			c.Tied, c.ZLoss, c.QKNorm, c.DocMask = true, 1e-2, true, true
			return c
		}, 17, 50, true, false},
		{"moe z-loss B9xT64", func() Config {
			c := headConfig()
			c.NLayers, c.ZLoss = 2, 1e-3
			c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoEExpertHidden = 2, 4, 2, 16
			c.MoESharedExpert, c.MoENormTopK, c.MoECapacityFactor = true, true, 1.0
			c.MoEAuxLossAlpha, c.MoERouterZLoss, c.MoEBalance = 0.1, 0.05, "aux"
			return c
		}, 9, 64, true, false},
		{"one partial chunk B3xT40", headConfig, 3, 40, true, false},
		{"wide d_model, lm_head not packed B9xT64", func() Config {
			c := headConfig()
			c.DModel, c.NHeads, c.NKVHeads = 160, 4, 4 // 2 packed copies of lm_head > the logits saved, even with kc = 256
			return c
		}, 9, 64, false, true},
	}
	var packedRuns, unpackedRuns int // multi-chunk passes with and without the packed lm_head
	savedThreads := kernels.Threads()
	savedImpl := kernels.Impl()
	t.Cleanup(func() {
		kernels.SetThreads(savedThreads)
		if _, err := kernels.UseImpl(savedImpl); err != nil {
			t.Error(err)
		}
	})
	for _, impl := range kernels.ImplsAvailable() {
		if _, err := kernels.UseImpl(impl); err != nil {
			t.Fatal(err)
		}
		kc := kernels.GemmKC()
		for _, threads := range []int{1, 2} {
			kernels.SetThreads(threads)
			for _, sh := range shapes {
				cfg := sh.cfg()
				b1 := headBatch(cfg, sh.B, sh.T, 1, sh.mask)
				b2 := headBatch(cfg, sh.B, sh.T, 2, sh.mask)
				N := sh.B * sh.T
				ref, err := New(cfg, 3)
				if err != nil {
					t.Fatal(err)
				}
				ref.headRows = N // the whole-batch head: one chunk
				var want [2]Stats
				for i, b := range []*Batch{b1, b2} {
					if want[i], err = ref.ForwardBackward(b, 0.5); err != nil {
						t.Fatal(err)
					}
				}
				rowsList := []int{1, kc + 1, 2 * kc}
				if sh.one {
					rowsList = rowsList[:1]
				}
				for _, rows := range rowsList {
					t.Run(fmt.Sprintf("%s/threads=%d/%s/rows=%d", impl, threads, sh.name, rows), func(t *testing.T) {
						m, _ := New(cfg, 3)
						m.headRows = rows
						rec := &recTracer{}
						m.Trace = rec
						for i, b := range []*Batch{b1, b2} {
							got, err := m.ForwardBackward(b, 0.5)
							if err != nil {
								t.Fatal(err)
							}
							got.ForwardTime, got.BackwardTime = want[i].ForwardTime, want[i].BackwardTime
							if got != want[i] {
								t.Fatalf("micro-batch %d: stats %+v, whole-batch head %+v", i, got, want[i])
							}
						}
						if i := f32bits(m.Grads, ref.Grads); i != -1 {
							t.Fatalf("grad[%d] = %g, whole-batch head %g", i, m.Grads[i], ref.Grads[i])
						}
						if a, b := m.vit.LogitLSEMean, ref.vit.LogitLSEMean; math.Float32bits(a) != math.Float32bits(b) {
							t.Fatalf("LogitLSEMean %g, whole-batch head %g", a, b)
						}
						chunks := (N + m.headChunk() - 1) / m.headChunk()
						if chunks > 1 && m.a.lmT.Floats() > 0 {
							packedRuns++
						} else if chunks > 1 {
							unpackedRuns++
						}
						if m.headChunk()%kc != 0 || m.headChunk() < rows {
							t.Fatalf("%d rows per chunk for %d requested and kc %d", m.headChunk(), rows, kc)
						}
						n := 0
						for _, op := range rec.ops {
							if op == "0:cross_entropy" {
								n++
							}
						}
						if rec.depth != 0 || rec.bad != 0 || n != 2*chunks {
							t.Fatalf("spans: depth %d, %d stray ends, %d cross_entropy spans over 2 passes, want %d", rec.depth, rec.bad, n, 2*chunks)
						}
					})
				}
			}
		}
	}
	if packedRuns == 0 || unpackedRuns == 0 {
		t.Fatalf("multi-chunk passes with the packed lm_head: %d, without: %d; the test must cover both", packedRuns, unpackedRuns)
	}
}

// TestHeadKeepsForwardOutputs: a model that trains holds one chunk of
// logits; Forward (and Outputs after it) still has every position's
// logits, equal to those of a model that never trained, while Outputs
// after ForwardBackward stays nil; a later ForwardBackward is unchanged
// by the Forward in between.
func TestHeadKeepsForwardOutputs(t *testing.T) {
	cfg := headConfig()
	b := headBatch(cfg, 21, 64, 5, true)
	N, V := 21*64, cfg.Vocab
	m, _ := New(cfg, 9)
	m.headRows = 1 // chunks of kc rows
	fresh, _ := New(cfg, 9)
	st1, err := m.ForwardBackward(b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if z, lse := m.Outputs(); z != nil || lse != nil {
		t.Fatal("Outputs after ForwardBackward is not nil")
	}
	if got, want := len(m.a.logits), m.headChunk()*logitsStride(V); got != want || want >= N*V {
		t.Fatalf("training holds %d logits, want one chunk of %d (of %d)", got, want, N*V)
	}
	if _, err := m.Forward(b); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Forward(b); err != nil {
		t.Fatal(err)
	}
	z, lse := m.Outputs()
	z0, lse0 := fresh.Outputs()
	if len(z) != N*V || f32bits(z, z0) != -1 || f32bits(lse, lse0) != -1 {
		t.Fatalf("Forward after ForwardBackward: %d logits, want %d equal to a fresh model's", len(z), N*V)
	}
	g1 := slices.Clone(m.Grads)
	m.ZeroGrads()
	st2, err := m.ForwardBackward(b, 1)
	if err != nil {
		t.Fatal(err)
	}
	st2.ForwardTime, st2.BackwardTime = st1.ForwardTime, st1.BackwardTime
	if st1 != st2 || f32bits(g1, m.Grads) != -1 {
		t.Fatal("ForwardBackward after a Forward differs from the first")
	}
}

// TestHeadZeroAllocs: after the first pass, a training step whose head
// takes several chunks allocates nothing, with lm_head packed once per pass
// or per GEMM, on 1 and 2 threads; so does a Forward after it.
func TestHeadZeroAllocs(t *testing.T) {
	saved := kernels.Threads()
	t.Cleanup(func() { kernels.SetThreads(saved) })
	wide := headConfig()
	wide.DModel, wide.NHeads, wide.NKVHeads = 160, 4, 4
	for _, threads := range []int{1, 2} {
		kernels.SetThreads(threads)
		for _, tc := range []struct {
			cfg    Config
			B      int
			packed bool
		}{{headConfig(), 21, true}, {wide, 9, false}} {
			cfg := tc.cfg
			m, _ := New(cfg, 1)
			m.headRows = 1 // chunks of kc rows
			b := headBatch(cfg, tc.B, 64, 3, true)
			if _, err := m.ForwardBackward(b, 1); err != nil {
				t.Fatal(err)
			}
			if got := m.a.lmT.Floats() > 0; got != tc.packed {
				t.Fatalf("d_model %d, %d tokens: lm_head packed %v, want %v", cfg.DModel, tc.B*64, got, tc.packed)
			}
			if _, err := m.Forward(b); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(3, func() {
				m.ZeroGrads()
				m.ForwardBackward(b, 1)
				m.Forward(b)
			})
			if allocs != 0 {
				t.Fatalf("threads %d, d_model %d: %v allocations per step, want 0", threads, cfg.DModel, allocs)
			}
		}
	}
}

// TestHeadChunkDefault: without a requested row count a chunk is the
// largest multiple of kc rows whose logits fit headChunkBytes (kc rows when
// none fit): the whole micro-batch of every preset (ref7m 2,048 × 8,192,
// 124m 1,024 × 50,304).
func TestHeadChunkDefault(t *testing.T) {
	kc := kernels.GemmKC()
	for _, vocab := range []int{300, 8192, 50304, 1 << 22} {
		got, fit := headChunkFor(0, vocab), headChunkBytes/(4*vocab)
		if got%kc != 0 || (got > fit && got != kc) || (got+kc <= fit) {
			t.Errorf("vocab %d: %d rows per chunk, want the largest multiple of kc %d up to %d (or kc)", vocab, got, kc, fit)
		}
	}
	for _, p := range []struct{ vocab, tokens int }{{8192, 2048}, {50304, 1024}} {
		if got := headChunkFor(0, p.vocab); got < p.tokens {
			t.Errorf("vocab %d: %d rows per chunk, below the preset's %d tokens", p.vocab, got, p.tokens)
		}
	}
	if got := headChunkFor(kc+1, 8192); got != 2*kc {
		t.Errorf("%d rows requested: %d per chunk, want %d", kc+1, got, 2*kc)
	}
}

// timeTracer sums the wall time of the spans named name and notes when
// the last span named last began.
type timeTracer struct {
	name, last string
	open       []time.Time
	names      []string
	sum        time.Duration
	lastAt     time.Time
}

func (r *timeTracer) Begin(op string, layer int) {
	now := time.Now()
	if op == r.last {
		r.lastAt = now
	}
	r.open = append(r.open, now)
	r.names = append(r.names, op)
}

func (r *timeTracer) End() {
	n := len(r.open) - 1
	if r.names[n] == r.name {
		r.sum += time.Since(r.open[n])
	}
	r.open, r.names = r.open[:n], r.names[:n]
}

// TestHeadTimesCountAsBackward: the lm_head gradient GEMMs that run inside
// the training head count as backward time, not forward, with one chunk
// and with several; forward and backward still add up to the pass.
func TestHeadTimesCountAsBackward(t *testing.T) {
	cfg := headConfig()
	b := headBatch(cfg, 21, 64, 4, false)
	for _, rows := range []int{0, 1} {
		m, _ := New(cfg, 2)
		m.headRows = rows
		if _, err := m.ForwardBackward(b, 1); err != nil {
			t.Fatal(err)
		}
		tr := &timeTracer{name: opLMHeadGemmBwd, last: opLMHeadBwd} // the last lm_head_backward: the final norm's, backward's first op
		m.Trace = tr
		t0 := time.Now()
		st, err := m.ForwardBackward(b, 1)
		wall := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		untilBackward := tr.lastAt.Sub(t0) // forward and the whole head, gradient GEMMs included
		if tr.sum <= 0 || st.BackwardTime < tr.sum || st.ForwardTime <= 0 || st.ForwardTime+st.BackwardTime > wall ||
			st.ForwardTime > untilBackward-tr.sum/2 {
			t.Fatalf("rows %d: forward %v, backward %v, lm_head gradient GEMMs %v, %v until backward, pass %v",
				rows, st.ForwardTime, st.BackwardTime, tr.sum, untilBackward, wall)
		}
	}
}
