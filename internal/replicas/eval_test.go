package replicas

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// TestScoreForwardOnly: validation's forward-only loss is Forward's to
// 1e-6 relative over the same tokens; with a Mask, or a Scorer without
// LogProbs, it is Forward's own.
func TestScoreForwardOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  model.Config
	}{
		{"bytes-docmask-qknorm", model.Config{Vocab: 256, DModel: 32, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 48, SeqLen: 24,
			RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, Tied: true, InitStd: 0.5, DocMask: true}},
		{"bpe-untied", model.Config{Vocab: 3000, DModel: 32, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 48, SeqLen: 16,
			RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.3, NoPEEvery: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := model.New(tc.cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			b := evalBatch(tc.cfg, 3, rand.New(rand.NewPCG(2, 2)))
			fw, err := m.Forward(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Score(m, b)
			if err != nil {
				t.Fatal(err)
			}
			if rel := math.Abs(got.Loss-fw.Loss) / fw.Loss; got.Tokens != fw.Tokens || rel > 1e-6 {
				t.Fatalf("forward-only %v over %d tokens, Forward %v over %d (relative %.3g)", got.Loss, got.Tokens, fw.Loss, fw.Tokens, rel)
			}
			plain := struct{ Scorer }{m} // hides LogProbs
			if st, err := Score(plain, b); err != nil || st.Loss != fw.Loss {
				t.Fatalf("Scorer without LogProbs: %v %v, want Forward's %v", st.Loss, err, fw.Loss)
			}
			b.Mask = make([]float32, b.B*b.T)
			for i := range b.Mask {
				b.Mask[i] = float32(i % 2)
			}
			fm, _ := m.Forward(b)
			if st, err := Score(m, b); err != nil || st.Loss != fm.Loss || st.Tokens != fm.Tokens {
				t.Fatalf("masked batch: %v over %d (%v), want Forward's %v over %d", st.Loss, st.Tokens, err, fm.Loss, fm.Tokens)
			}
		})
	}
}

// evalBatch is B random rows of c (documents of 5 tokens, one target
// unscored).
func evalBatch(c model.Config, B int, r *rand.Rand) *model.Batch {
	T := c.SeqLen
	b := &model.Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T), SegIDs: make([]int32, B*T)}
	for i := range b.Inputs {
		b.Inputs[i], b.Targets[i], b.SegIDs[i] = int32(r.IntN(c.Vocab)), int32(r.IntN(c.Vocab)), int32(i%T/5)
	}
	b.Targets[min(4, len(b.Targets)-1)] = -1
	return b
}

// evaluate scores bs with Evaluate, on a Set of p replicas of a fresh
// model (seed 7, precision prec set after the Set was made) or, p = 1, on the model alone, with the
// pool on threads threads, and returns the stats in the order done heard
// them (checking it is the order of k) and the sum of loss × tokens.
func evaluate(t *testing.T, c model.Config, prec ops.Precision, p, threads int, bs []*model.Batch) ([]model.Stats, float64) {
	t.Helper()
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(threads)
	m, err := model.New(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	var s *Set
	if p > 1 {
		if s, err = New(m, p, 4, c.SeqLen); err != nil {
			t.Fatal(err)
		}
	}
	m.SetPrecision(prec) // after New: the replicas follow it
	buf := Slot{Inputs: make([]int32, 4*c.SeqLen), Targets: make([]int32, 4*c.SeqLen), SegIDs: make([]int32, 4*c.SeqLen)}
	fill := func(k int, buf Slot) (*model.Batch, error) {
		b := bs[k]
		n := len(b.Inputs)
		copy(buf.Inputs, b.Inputs)
		copy(buf.Targets, b.Targets)
		copy(buf.SegIDs, b.SegIDs)
		return &model.Batch{B: b.B, T: b.T, Inputs: buf.Inputs[:n], Targets: buf.Targets[:n], SegIDs: buf.SegIDs[:n]}, nil
	}
	var out []model.Stats
	var sum float64
	done := func(k int, st model.Stats) {
		if k != len(out) {
			t.Fatalf("done heard batch %d after %d batches", k, len(out))
		}
		out = append(out, st)
		sum += st.Loss * float64(st.Tokens)
	}
	if err := Evaluate(s, m, buf, len(bs), fill, done); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(bs) {
		t.Fatalf("done heard %d batches of %d", len(out), len(bs))
	}
	return out, sum
}

// TestEvaluateSameBits: scoring a list of batches side by side on 2 or 3
// replicas gives every batch's loss and tokens, and so their sum, the same
// bits as scoring them one after the other on the model on two threads,
// on one thread or two, in fp32 and bf16, with doc_mask, for no batch, one
// (a round of one, on the caller with the pool free), rounds not full and
// a short last batch.
func TestEvaluateSameBits(t *testing.T) {
	c := testConfig()
	c.DocMask = true
	for _, prec := range []ops.Precision{ops.FP32, ops.BF16} {
		for _, n := range []int{0, 1, 2, 5} {
			r := rand.New(rand.NewPCG(uint64(n), 9))
			var bs []*model.Batch
			for k := range n {
				bs = append(bs, evalBatch(c, 4-k/4*3, r)) // the fifth one row
			}
			want, wsum := evaluate(t, c, prec, 1, 2, bs)
			for _, p := range []int{2, 3} {
				for _, threads := range []int{1, 2} {
					got, sum := evaluate(t, c, prec, p, threads, bs)
					for k := range want {
						if got[k].Loss != want[k].Loss || got[k].Tokens != want[k].Tokens || got[k].Tokens == 0 {
							t.Fatalf("%v n=%d P=%d threads=%d: batch %d loss %v over %d, one after the other %v over %d",
								prec, n, p, threads, k, got[k].Loss, got[k].Tokens, want[k].Loss, want[k].Tokens)
						}
					}
					if sum != wsum || math.IsNaN(sum) {
						t.Fatalf("%v n=%d P=%d threads=%d: sum %v, one after the other %v", prec, n, p, threads, sum, wsum)
					}
				}
			}
		}
	}
}

// TestEvaluateErrors: a fill error comes back as it is, with no later
// batch filled; a batch the model refuses names its batch and replica.
func TestEvaluateErrors(t *testing.T) {
	c := testConfig()
	m, err := model.New(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m, 2, 4, c.SeqLen)
	if err != nil {
		t.Fatal(err)
	}
	good := evalBatch(c, 2, rand.New(rand.NewPCG(1, 1)))
	bad := &model.Batch{B: 1, T: c.SeqLen, Inputs: make([]int32, c.SeqLen), Targets: make([]int32, c.SeqLen)}
	bad.Inputs[3] = int32(c.Vocab) // out of the vocabulary
	errFill := errors.New("row 9 unreadable")
	for _, set := range []*Set{nil, s} {
		filled := 0
		fill := func(k int, _ Slot) (*model.Batch, error) {
			filled++
			if k == 2 {
				return nil, errFill
			}
			return good, nil
		}
		if err := Evaluate(set, m, Slot{}, 5, fill, func(int, model.Stats) {}); !errors.Is(err, errFill) || filled != 3 {
			t.Errorf("set %v: fill error: %v after %d fills, want it after 3", set != nil, err, filled)
		}
		fill = func(k int, _ Slot) (*model.Batch, error) {
			if k == 3 {
				return bad, nil
			}
			return good, nil
		}
		heard := 0
		err := Evaluate(set, m, Slot{}, 4, fill, func(int, model.Stats) { heard++ })
		if err == nil || !strings.Contains(err.Error(), "batch 3") {
			t.Errorf("set %v: a bad batch: %v", set != nil, err)
		}
		if set != nil && (heard != 2 || !strings.Contains(err.Error(), "replica 1")) {
			t.Errorf("set: a bad batch in the second round: %v after %d batches heard, want the first round's 2 and its replica", err, heard)
		}
	}
}

// BenchmarkEvaluate: 20 validation batches of 6 × 64 tokens at the
// shakespeare-char shapes, one after the other on the pool's threads
// (seq) and side by side on two replicas (pair).
func BenchmarkEvaluate(b *testing.B) {
	c := shakespeareChar()
	m, err := model.New(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(m, 2, 6, c.SeqLen)
	if err != nil {
		b.Fatal(err)
	}
	bs := make([]*model.Batch, 20)
	r := rand.New(rand.NewPCG(1, 2))
	for k := range bs {
		bs[k] = evalBatch(c, 6, r)
	}
	fill := func(k int, _ Slot) (*model.Batch, error) { return bs[k], nil }
	for _, tc := range []struct {
		name string
		set  *Set
	}{{"seq", nil}, {"pair", s}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if err := Evaluate(tc.set, m, Slot{}, len(bs), fill, func(int, model.Stats) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
