package report

import (
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// UnigramBaseline returns the loss (nats/token) of the best context-free
// model of a prepared dataset: the cross-entropy of its validation tokens
// under the add-one-smoothed token frequencies of its training tokens, pooled
// over sources. A trained model's held-out loss should be clearly below it.
func UnigramBaseline(datasetDir string) (float64, error) {
	ds, err := shards.Open(datasetDir)
	if err != nil {
		return math.NaN(), fmt.Errorf("unigram baseline: %w", err)
	}
	defer ds.Close()
	tok, err := ds.Tokenizer()
	if err != nil {
		return math.NaN(), fmt.Errorf("unigram baseline: %w", err)
	}
	vocab := tok.VocabSize()
	counts := make([]float64, vocab)
	var total float64
	buf := make([]int32, 1<<16)
	each := func(split string, fn func(id int32)) error {
		for _, src := range ds.Sources() {
			st, err := ds.Stream(src, split)
			if err != nil {
				return fmt.Errorf("unigram baseline: %w", err)
			}
			for off := int64(0); off < st.Len(); off += int64(len(buf)) {
				n := min(int64(len(buf)), st.Len()-off)
				if err := st.ReadAt(buf[:n], off); err != nil {
					return fmt.Errorf("unigram baseline: %s/%s: %w", src, split, err)
				}
				for _, id := range buf[:n] {
					fn(id)
				}
			}
		}
		return nil
	}
	if err := each("train", func(id int32) {
		if int(id) < vocab && id >= 0 {
			counts[id]++
			total++
		}
	}); err != nil {
		return math.NaN(), err
	}
	if total == 0 {
		return math.NaN(), fmt.Errorf("unigram baseline: %s has no training tokens", datasetDir)
	}
	denom := total + float64(vocab)
	var nll, n float64
	if err := each("val", func(id int32) {
		c := 0.0
		if int(id) < vocab && id >= 0 {
			c = counts[id]
		}
		nll -= math.Log((c + 1) / denom)
		n++
	}); err != nil {
		return math.NaN(), err
	}
	if n == 0 {
		return math.NaN(), fmt.Errorf("unigram baseline: %s has no validation tokens", datasetDir)
	}
	return nll / n, nil
}

// UnigramBytes is UnigramBaseline for a byte-level run: the cross-entropy
// (nats/byte) of val under the add-one-smoothed byte frequencies of train.
// NaN when either is empty.
func UnigramBytes(train, val []byte) float64 {
	if len(train) == 0 || len(val) == 0 {
		return math.NaN()
	}
	var counts [256]float64
	for _, b := range train {
		counts[b]++
	}
	denom := float64(len(train)) + 256
	var nll float64
	for _, b := range val {
		nll -= math.Log((counts[b] + 1) / denom)
	}
	return nll / float64(len(val))
}
