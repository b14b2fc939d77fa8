package tokenizer

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// TrainOptions configures Train.
type TrainOptions struct {
	// VocabSize is the final vocabulary size: 256 bytes + merges + special
	// tokens.
	VocabSize int
	// Pattern is the pre-tokenisation pattern: "gpt2" (default), "llama3"
	// (digits in groups of 1–3), "cl100k", "o200k" (case-split words), or
	// a regular expression.
	Pattern string
	// Special lists the special tokens, appended after the merges in this
	// order. nil means {"<|endoftext|>"}.
	Special []string
	// Workers pre-tokenise and count in parallel (0 = GOMAXPROCS). The
	// result does not depend on it.
	Workers int
	// Progress receives a progress bar; nil is quiet.
	Progress io.Writer
	// MinFrequency stops training when the most frequent pair occurs fewer
	// times than this (0 or 1: merge while any pair is left).
	MinFrequency int
}

// Train learns a byte-level BPE from docs. Byte b has id b, merge k creates
// id 256+k (unless its bytes already are a token, in which case the merge
// reuses that id, as Hugging Face does), and the special tokens follow.
// The most frequent pair is merged first; ties go to the smallest
// (left id, right id). The result is deterministic for a given input.
func Train(ctx context.Context, docs iter.Seq[string], opts TrainOptions) (*Tokenizer, error) {
	special := opts.Special
	if special == nil {
		special = []string{"<|endoftext|>"}
	}
	if opts.VocabSize < 256+len(special) {
		return nil, fmt.Errorf("train tokenizer: vocab size %d is below 256 bytes + %d special tokens", opts.VocabSize, len(special))
	}
	sp, pattern, err := newSplitter(opts.Pattern)
	if err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	counts, err := countPreTokens(ctx, docs, sp, opts)
	if err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	t := &Tokenizer{split: sp, pattern: pattern}
	for b := 0; b < 256; b++ {
		t.vocab = append(t.vocab, []byte{byte(b)})
	}
	if err := learnMerges(ctx, t, counts, opts.VocabSize-len(special), opts); err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	for _, s := range special {
		t.added = append(t.added, AddedToken{ID: int32(len(t.vocab) + len(t.added)), Content: s, Special: true})
	}
	if err := t.build(); err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	return t, nil
}

// countPreTokens counts pre-tokens over docs with opts.Workers goroutines.
func countPreTokens(ctx context.Context, docs iter.Seq[string], sp splitter, opts TrainOptions) (map[string]int64, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var bar *progressbar.ProgressBar
	if opts.Progress != nil {
		bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(opts.Progress),
			progressbar.OptionSetDescription("counting pre-tokens"), progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(200_000_000))
	}
	batches := make(chan []string, workers*2)
	results := make([]map[string]int64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			m := map[string]int64{}
			for batch := range batches {
				for _, d := range batch {
					sp.split(d, func(p string) { m[p]++ })
				}
			}
			results[w] = m
		}(w)
	}
	var batch []string
	size := 0
	var err error
	for d := range docs {
		if err = ctx.Err(); err != nil {
			break
		}
		batch = append(batch, d)
		size += len(d)
		if size >= 1<<20 || len(batch) >= 1024 {
			batches <- batch
			if bar != nil {
				bar.Add(size)
			}
			batch, size = nil, 0
		}
	}
	if len(batch) > 0 {
		batches <- batch
	}
	close(batches)
	wg.Wait()
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(opts.Progress)
	}
	if err != nil {
		return nil, err
	}
	total := results[0]
	for _, m := range results[1:] {
		for k, v := range m {
			total[k] += v
		}
	}
	return total, nil
}

type pairCount struct {
	count int64
	pair  uint64
}

type pairHeap []pairCount

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count > h[j].count
	}
	return h[i].pair < h[j].pair
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairCount)) }
func (h *pairHeap) Pop() any     { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

// learnMerges adds merges to t until it has target tokens. Pair counts
// are updated incrementally: only the words that contain the merged pair
// (found through a pair → words index) are re-counted, and a max-heap with
// lazy deletion picks the next pair.
func learnMerges(ctx context.Context, t *Tokenizer, counts map[string]int64, target int, opts TrainOptions) error {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	words := make([][]int32, len(keys))
	freq := make([]int64, len(keys))
	pairs := map[uint64]int64{}
	where := map[uint64][]int32{}
	for i, k := range keys {
		w := make([]int32, len(k))
		for j := 0; j < len(k); j++ {
			w[j] = int32(k[j])
		}
		words[i], freq[i] = w, counts[k]
		for j := 0; j+1 < len(w); j++ {
			p := uint64(w[j])<<32 | uint64(w[j+1])
			pairs[p] += freq[i]
			if l := where[p]; len(l) == 0 || l[len(l)-1] != int32(i) {
				where[p] = append(l, int32(i))
			}
		}
	}
	h := make(pairHeap, 0, len(pairs))
	for p, c := range pairs {
		h = append(h, pairCount{c, p})
	}
	heap.Init(&h)
	minFreq := int64(max(opts.MinFrequency, 1))
	tokID := map[string]int32{}
	for id, b := range t.vocab {
		tokID[string(b)] = int32(id)
	}
	var bar *progressbar.ProgressBar
	if opts.Progress != nil {
		bar = progressbar.NewOptions(target-len(t.vocab), progressbar.OptionSetWriter(opts.Progress),
			progressbar.OptionSetDescription("merges"), progressbar.OptionShowCount(), progressbar.OptionThrottle(200_000_000))
		defer func() { bar.Finish(); fmt.Fprintln(opts.Progress) }()
	}
	touched := map[uint64]struct{}{}
	for len(t.vocab) < target && h.Len() > 0 {
		if len(t.merges)%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		top := heap.Pop(&h).(pairCount)
		if c, ok := pairs[top.pair]; !ok || c != top.count {
			continue // stale entry
		}
		if top.count < minFreq {
			break
		}
		a, b := int32(top.pair>>32), int32(top.pair)
		joined := slices.Concat(t.vocab[a], t.vocab[b])
		id, ok := tokID[string(joined)]
		if !ok {
			id = int32(len(t.vocab))
			t.vocab = append(t.vocab, joined)
			tokID[string(joined)] = id
			if bar != nil {
				bar.Add(1)
			}
		}
		t.merges = append(t.merges, [2]int32{a, b})
		list := where[top.pair]
		delete(where, top.pair)
		clear(touched)
		for _, wi := range list {
			w := words[wi]
			if !hasPair(w, a, b) {
				continue
			}
			f := freq[wi]
			for j := 0; j+1 < len(w); j++ {
				p := uint64(w[j])<<32 | uint64(w[j+1])
				pairs[p] -= f
				touched[p] = struct{}{}
			}
			out := w[:0]
			for j := 0; j < len(w); j++ {
				if j+1 < len(w) && w[j] == a && w[j+1] == b {
					out = append(out, id)
					j++
				} else {
					out = append(out, w[j])
				}
			}
			words[wi] = out
			for j := 0; j+1 < len(out); j++ {
				p := uint64(out[j])<<32 | uint64(out[j+1])
				pairs[p] += f
				touched[p] = struct{}{}
				if out[j] == id || out[j+1] == id {
					if l := where[p]; len(l) == 0 || l[len(l)-1] != wi {
						where[p] = append(l, wi)
					}
				}
			}
		}
		delete(pairs, top.pair)
		// push touched pairs in a fixed order so the heap layout (and
		// hence nothing at all) depends on map iteration order
		tp := make([]uint64, 0, len(touched))
		for p := range touched {
			tp = append(tp, p)
		}
		slices.Sort(tp)
		for _, p := range tp {
			c, ok := pairs[p]
			if !ok {
				continue
			}
			if c <= 0 {
				delete(pairs, p)
				continue
			}
			heap.Push(&h, pairCount{c, p})
		}
	}
	if len(t.merges) == 0 && target > 256 && len(counts) > 0 {
		return errors.New("no pair occurs often enough to merge")
	}
	return nil
}

func hasPair(w []int32, a, b int32) bool {
	for j := 0; j+1 < len(w); j++ {
		if w[j] == a && w[j+1] == b {
			return true
		}
	}
	return false
}
