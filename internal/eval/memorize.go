package eval

import (
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// Memorization lengths: a document's first MemPrefix tokens are the prompt
// and the next MemCont the continuation greedy decoding must reproduce,
// for a model whose context holds both (MemLengths).
const (
	MemPrefix = 64
	MemCont   = 64
)

// MemLengths returns the prompt and continuation lengths of memorization
// for a model of context seqLen: MemPrefix and MemCont when both fit in
// one context (seq_len ≥ 128), else the context split in halves (the
// prompt the smaller), so a passage is always one window the model can
// have seen whole in training and each decoded token attends to its
// passage from the first token, as it did there. A passage longer than the
// context would slide the window past its start: every token after the
// first seq_len recomputes a full window (no KV cache reuse), about
// seq_len times the cost, and the model never trained on the passage as
// one sequence (64 + 64 bytes at seq_len 64 took 3.1 s of a 21 s
// shakespeare-char run; 32 + 32 takes 0.1 s).
func MemLengths(seqLen int) (prefix, cont int) {
	if seqLen >= MemPrefix+MemCont {
		return MemPrefix, MemCont
	}
	prefix = max(1, seqLen/2)
	return prefix, max(1, seqLen-prefix)
}

// MemSide is the memorization of one split's documents.
type MemSide struct {
	Split         string  `json:"split"`
	Docs          int     `json:"docs"`
	ExactMatch    float64 `json:"exact_match"`   // fraction of documents whose whole continuation was reproduced
	Overlap       float64 `json:"token_overlap"` // mean fraction of continuation positions reproduced
	OverlapStderr float64 `json:"token_overlap_stderr"`
}

// MemResult is memorization on training documents beside held-out ones
// (the baseline).
type MemResult struct {
	Prefix  int     `json:"prefix_tokens"`
	Cont    int     `json:"continuation_tokens"`
	Train   MemSide `json:"train"`
	HeldOut MemSide `json:"held_out"`
	Seconds float64 `json:"seconds"`
}

// Overlap compares a decoded continuation with the true one: exact when
// every position matches, and the fraction of positions that match (over
// len(want); missing positions of got count as mismatches).
func Overlap(got, want []int32) (exact bool, frac float64) {
	if len(want) == 0 {
		return len(got) == 0, 1
	}
	same := 0
	for i, w := range want {
		if i < len(got) && got[i] == w {
			same++
		}
	}
	return same == len(want), float64(same) / float64(len(want))
}

// greedyCacheFloats bounds the KV caches of one Greedy decoder (128 MiB):
// more prefixes than fit decode in groups, one after another.
var greedyCacheFloats = 1 << 25

// Greedy decodes n tokens after each prefix, always taking the most likely
// token (ids below the codec's vocabulary when it names one; ties to the
// lowest id). The prefixes decode in lockstep through one batched KV-cache
// decoder (model.BatchDecoder; as many at a time as greedyCacheFloats
// allows), each as if alone: its prefix is read once, then one token per
// step; a context longer than seq_len keeps its last seq_len tokens (that
// sequence's cache is refilled with them).
func (s *Scorer) Greedy(prefixes [][]int32, n int) ([][]int32, error) {
	for i, p := range prefixes {
		if len(p) == 0 {
			return nil, fmt.Errorf("prefix %d is empty", i)
		}
	}
	out := make([][]int32, 0, len(prefixes))
	group := max(1, greedyCacheFloats/s.Model.DecoderCacheFloats(s.Model.Cfg.SeqLen))
	for g := 0; g < len(prefixes); g += group {
		got, err := s.greedyLockstep(prefixes[g:min(g+group, len(prefixes))], n)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// greedyLockstep is Greedy for prefixes decoded together in one decoder.
func (s *Scorer) greedyLockstep(prefixes [][]int32, n int) ([][]int32, error) {
	out := make([][]int32, len(prefixes))
	V, SL := s.Model.Cfg.Vocab, s.Model.Cfg.SeqLen
	limit := V
	if s.Codec.Vocab > 0 {
		limit = min(V, s.Codec.Vocab)
	}
	ctx := make([][]int32, len(prefixes))  // each prefix and its continuation
	feed := make([][]int32, len(prefixes)) // the tokens of the next Append
	for i, p := range prefixes {
		ctx[i] = append(make([]int32, 0, len(p)+n), p...)
		feed[i] = ctx[i][max(0, len(p)-SL):]
	}
	d, err := s.Model.NewBatchDecoder(len(prefixes), SL)
	if err != nil {
		return nil, err
	}
	logits := make([]float32, len(prefixes)*V)
	for k := range n {
		if s.Ctx != nil && s.Ctx.Err() != nil {
			return nil, s.Ctx.Err()
		}
		if err := d.Append(feed, logits); err != nil {
			return nil, fmt.Errorf("greedy: token %d: %w", k, err)
		}
		for i := range ctx {
			ctx[i] = append(ctx[i], argmax(logits[i*V:i*V+limit]))
		}
		for i, c := range ctx {
			if d.Len(i) < d.Cap() {
				feed[i] = c[len(c)-1:]
			} else { // full: the last seq_len tokens
				d.Reset(i)
				feed[i] = c[len(c)-SL:]
			}
		}
	}
	for i, p := range prefixes {
		out[i] = ctx[i][len(p):]
	}
	return out, nil
}

// argmax is the index of the largest value (the first of equal ones; 0
// when none is above −Inf).
func argmax(v []float32) int32 {
	best, arg := float32(math.Inf(-1)), 0
	for i, x := range v {
		if x > best {
			best, arg = x, i
		}
	}
	return int32(arg)
}

// Memorize greedy-decodes len(doc) − prefix tokens after the first prefix
// tokens of each document and compares them with the document's rest.
func (s *Scorer) Memorize(split string, docs [][]int32, prefix int) (MemSide, error) {
	r := MemSide{Split: split, Docs: len(docs)}
	if len(docs) == 0 {
		return r, nil
	}
	pre := make([][]int32, len(docs))
	for i, d := range docs {
		if len(d) <= prefix {
			return r, fmt.Errorf("%s document %d has %d tokens, need more than the prefix %d", split, i, len(d), prefix)
		}
		pre[i] = d[:prefix]
	}
	cont := len(docs[0]) - prefix
	got, err := s.Greedy(pre, cont)
	if err != nil {
		return r, err
	}
	fr := make([]float64, len(docs))
	exact := 0
	for i, d := range docs {
		ex, f := Overlap(got[i], d[prefix:])
		if ex {
			exact++
		}
		fr[i] = f
	}
	r.ExactMatch = float64(exact) / float64(len(docs))
	r.Overlap, r.OverlapStderr = MeanStderr(fr)
	return r, nil
}

// Spaced picks n of total indices, evenly spaced (all when n ≥ total).
func Spaced(total, n int) []int {
	if n >= total {
		n = total
	}
	out := make([]int, n)
	for k := range n {
		out[k] = int(int64(k) * int64(total) / int64(n))
	}
	return out
}

// memDocs returns n documents of length want tokens from split ("train" or
// "val") of the run's data: for a dataset, the first want tokens of evenly
// spaced documents of at least want tokens (the sources' streams in order);
// for byte-level text, evenly spaced windows of want bytes.
func (d *runData) memDocs(split string, n, want int) ([][]int32, error) {
	if d.Dataset == nil {
		text := d.Train
		if split == shards.Val {
			text = d.Val
		}
		if len(text) < want {
			return nil, fmt.Errorf("memorization: the %s text has %d bytes, shorter than one passage of %d (prompt + continuation)", split, len(text), want)
		}
		var out [][]int32
		for _, k := range Spaced(len(text)-want+1, n) {
			out = append(out, bytesTokens(text[k:k+want]))
		}
		return out, nil
	}
	type ref struct {
		st  *shards.Stream
		off int64
	}
	var cand []ref
	var longest int64
	for _, src := range d.Dataset.Sources() {
		st, err := d.Dataset.Stream(src, split)
		if err != nil {
			return nil, err
		}
		starts := st.DocStarts()
		for i, s := range starts {
			end := st.Len()
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			if end-s >= int64(want) {
				cand = append(cand, ref{st, s})
			}
			longest = max(longest, end-s)
		}
	}
	if len(cand) == 0 {
		return nil, fmt.Errorf("memorization: no document of the dataset's %s split has %d tokens (prompt + continuation); its longest has %d", split, want, longest)
	}
	var out [][]int32
	for _, k := range Spaced(len(cand), n) {
		buf := make([]int32, want)
		if err := cand[k].st.ReadAt(buf, cand[k].off); err != nil {
			return nil, err
		}
		out = append(out, buf)
	}
	return out, nil
}

func bytesTokens(b []byte) []int32 {
	out := make([]int32, len(b))
	for i, c := range b {
		out[i] = int32(c)
	}
	return out
}
