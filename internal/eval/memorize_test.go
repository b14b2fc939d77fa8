package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/openrun"
)

// refGreedy is Greedy as it was before the batched decoder: one prefix at a
// time through a one-sequence Decoder. The batched Greedy must give the
// same tokens.
func refGreedy(s *Scorer, prefixes [][]int32, n int) ([][]int32, error) {
	out := make([][]int32, len(prefixes))
	V, SL := s.Model.Cfg.Vocab, s.Model.Cfg.SeqLen
	limit := V
	if s.Codec.Vocab > 0 {
		limit = min(V, s.Codec.Vocab)
	}
	d, err := s.Model.NewDecoder(SL)
	if err != nil {
		return nil, err
	}
	logits := make([]float32, V)
	for i, p := range prefixes {
		ctx := append([]int32(nil), p...)
		d.Reset()
		if err := d.Append(ctx[max(0, len(ctx)-SL):], logits); err != nil {
			return nil, err
		}
		for k := range n {
			best, arg := float32(math.Inf(-1)), 0
			for v := range limit {
				if logits[v] > best {
					best, arg = logits[v], v
				}
			}
			ctx = append(ctx, int32(arg))
			if k == n-1 {
				break
			}
			var err error
			if d.Len() < d.Cap() {
				err = d.Append(ctx[len(ctx)-1:], logits)
			} else {
				d.Reset()
				err = d.Append(ctx[len(ctx)-SL:], logits)
			}
			if err != nil {
				return nil, err
			}
		}
		out[i] = ctx[len(p):]
	}
	return out, nil
}

// greedyModel is a small random model; initStd large enough that its
// next-token distributions are peaked (greedy paths depend on the context).
func greedyModel(t *testing.T, seqLen int, tied bool, initStd float64) *model.Model {
	t.Helper()
	cfg := model.Config{Vocab: 23, DModel: 32, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 48, SeqLen: seqLen,
		RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, Tied: tied, InitStd: initStd}
	m, err := model.New(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func randPrefixes(r *rand.Rand, vocab int, lens ...int) [][]int32 {
	out := make([][]int32, len(lens))
	for i, n := range lens {
		for range n {
			out[i] = append(out[i], int32(r.IntN(vocab)))
		}
	}
	return out
}

// TestGreedyMatchesOneAtATime: the lockstep Greedy gives, token for token,
// what the one-prefix-at-a-time decoding gave, whether the context fits
// the cache all along, slides past seq_len from the start or from the
// middle of the continuation, starts longer than seq_len, or mixes these
// in one call; on random weights and on the trained tiny model.
func TestGreedyMatchesOneAtATime(t *testing.T) {
	ts, _ := tinyModel(t) // seq_len 32, trained on text
	trained := ts.Model
	cases := []struct {
		name   string
		seqLen int
		lens   []int // prefix lengths
		n      int
	}{
		{"cache", 48, []int{8, 8, 3}, 12},                    // 8+12 ≤ 48: one token per step
		{"slide", 32, []int{40, 40, 36}, 10},                 // prefix > seq_len: every step refills
		{"equal", 32, []int{32, 32, 32}, 9},                  // prefix = seq_len (the memorization case)
		{"long-prompt", 16, []int{40}, 6},                    // a prompt of 2.5 × seq_len
		{"mixed", 32, []int{1, 5, 20, 31, 32, 33, 70}, 14},   // each switches to sliding at its own step
		{"one-token", 16, []int{4, 16}, 1},                   // no step after the prefill
		{"many", 24, []int{24, 3, 9, 24, 24, 11, 2, 24}, 20}, // more sequences than gemvRows
	}
	r := rand.New(rand.NewPCG(3, 9))
	for _, tc := range cases {
		for _, w := range []struct {
			name string
			m    *model.Model
		}{{"random", greedyModel(t, tc.seqLen, true, 0.5)}, {"trained", trained}} {
			if w.name == "trained" && tc.seqLen != trained.Cfg.SeqLen {
				continue
			}
			t.Run(tc.name+"/"+w.name, func(t *testing.T) {
				s := &Scorer{Model: w.m, Codec: generate.BytesCodec()}
				pre := randPrefixes(r, min(w.m.Cfg.Vocab, 128), tc.lens...)
				checkGreedy(t, s, pre, tc.n)
			})
		}
	}
}

// checkGreedy compares Greedy with refGreedy and returns Greedy's tokens.
func checkGreedy(t *testing.T, s *Scorer, pre [][]int32, n int) [][]int32 {
	t.Helper()
	want, err := refGreedy(s, pre, n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Greedy(pre, n)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for i := range pre {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("prefix %d (%d tokens): lockstep %v, one at a time %v", i, len(pre[i]), got[i], want[i])
		}
		distinct[fmt.Sprint(got[i])] = true
	}
	if len(pre) > 1 && len(distinct) == 1 && n > 1 {
		t.Fatalf("every prefix decoded to %v: the comparison cannot tell contexts apart", got[0])
	}
	return got
}

// TestGreedyTiesAndCodecVocab: equal top logits go to the lowest id, and a
// codec vocabulary smaller than the model's is never exceeded.
func TestGreedyTiesAndCodecVocab(t *testing.T) {
	m := greedyModel(t, 16, false, 0.5)
	lm, ok := m.Tensor("lm_head.weight")
	if !ok {
		t.Fatal("no lm_head.weight")
	}
	D := m.Cfg.DModel
	row := func(v int) []float32 { return m.Params[lm.Offset+v*D : lm.Offset+(v+1)*D] }
	// ids 9 and 4 get the same lm_head row, scaled up so that they are the
	// top logit for many contexts: 4 must always win the tie
	for i := range row(9) {
		row(9)[i] *= 3
	}
	copy(row(4), row(9))
	r := rand.New(rand.NewPCG(5, 5))
	pre := randPrefixes(r, m.Cfg.Vocab, 20, 16, 5, 9, 30)
	s := &Scorer{Model: m, Codec: generate.BytesCodec()}
	got := checkGreedy(t, s, pre, 12)
	fours := 0
	for _, g := range got {
		for _, v := range g {
			if v == 9 {
				t.Fatalf("decoded %v: id 9 ties with 4 and must lose", g)
			}
			if v == 4 {
				fours++
			}
		}
	}
	if fours == 0 {
		t.Fatal("id 4 was never decoded: the tie was not exercised")
	}
	// the codec names 9 tokens: ids 9.. (4's twin among them) never come out
	s.Codec.Vocab = 9
	got = checkGreedy(t, s, pre, 12)
	for _, g := range got {
		for _, v := range g {
			if v >= 9 {
				t.Fatalf("decoded %v: id %d beyond the codec's 9", g, v)
			}
		}
	}
}

// TestMemorizeSameAsOneAtATime: the memorization numbers of the trained tiny
// model (seq_len 32, prefix 32: every token slides the context) are those
// of one-at-a-time decoding, value for value, on training and unseen text.
func TestMemorizeSameAsOneAtATime(t *testing.T) {
	s, _ := tinyModel(t)
	const pre, n = 32, 24
	d := &runData{&openrun.Data{Train: []byte(strings.Repeat("To be, or not to be, that is the question: ", 8)),
		Val: []byte(strings.Repeat("Pack my box with five dozen liquor jugs! ", 8))}}
	for _, split := range []string{"train", "val"} {
		docs, err := d.memDocs(split, 7, pre+n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Memorize(split, docs, pre)
		if err != nil {
			t.Fatal(err)
		}
		prefixes := make([][]int32, len(docs))
		for i, doc := range docs {
			prefixes[i] = doc[:pre]
		}
		cont, err := refGreedy(s, prefixes, n)
		if err != nil {
			t.Fatal(err)
		}
		want := MemSide{Split: split, Docs: len(docs)}
		fr := make([]float64, len(docs))
		for i, doc := range docs {
			ex, f := Overlap(cont[i], doc[pre:])
			if ex {
				want.ExactMatch++
			}
			fr[i] = f
		}
		want.ExactMatch /= float64(len(docs))
		want.Overlap, want.OverlapStderr = MeanStderr(fr)
		if got != want {
			t.Errorf("%s: lockstep %+v, one at a time %+v", split, got, want)
		}
		if want.Overlap == 0 || want.Overlap == 1 {
			t.Errorf("%s: overlap %v says nothing about the decoded tokens", split, want.Overlap)
		}
	}
}

// errAfter is a context whose Err turns context.Canceled after n calls.
type errAfter struct {
	context.Context
	n int
}

func (c *errAfter) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestGreedyCancelled: a context cancelled mid-decode stops Greedy between
// steps with the context's error.
func TestGreedyCancelled(t *testing.T) {
	m := greedyModel(t, 16, true, 0.5)
	ctx := &errAfter{Context: context.Background(), n: 3}
	s := &Scorer{Model: m, Codec: generate.BytesCodec(), Ctx: ctx}
	pre := randPrefixes(rand.New(rand.NewPCG(1, 1)), m.Cfg.Vocab, 20, 4)
	got, err := s.Greedy(pre, 10)
	if !errors.Is(err, context.Canceled) || got != nil {
		t.Fatalf("got %v, %v; want context.Canceled", got, err)
	}
	if ctx.n != 0 {
		t.Fatalf("stopped after %d of 3 checks", 3-ctx.n)
	}
}

// TestGreedyGroups: prefixes beyond what one decoder's cache budget holds
// decode group after group, with the same tokens; an empty prefix is an
// error naming it.
func TestGreedyGroups(t *testing.T) {
	m := greedyModel(t, 32, true, 0.5)
	defer func(f int) { greedyCacheFloats = f }(greedyCacheFloats)
	greedyCacheFloats = 3*m.DecoderCacheFloats(m.Cfg.SeqLen) + 1 // groups of 3
	s := &Scorer{Model: m, Codec: generate.BytesCodec()}
	pre := randPrefixes(rand.New(rand.NewPCG(8, 8)), m.Cfg.Vocab, 1, 5, 20, 31, 32, 33, 70)
	checkGreedy(t, s, pre, 14)
	pre[5] = nil
	if _, err := s.Greedy(pre, 3); err == nil || !strings.Contains(err.Error(), "prefix 5 is empty") {
		t.Fatalf("empty prefix: %v", err)
	}
}
