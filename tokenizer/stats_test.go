package tokenizer

import (
	"slices"
	"testing"
)

// TestStats checks the statistics against counts done by hand with GPT-2:
// "Hello world" is two one-token words; " tokenization" splits.
func TestStats(t *testing.T) {
	tok := gpt2(t)
	docs := []string{"Hello world", "Hello tokenization\nworld"}
	st := tok.Stats(slices.Values(docs))
	var tokens, continued, words int
	used := map[int32]bool{}
	for _, d := range docs {
		ids := tok.Encode(d)
		tokens += len(ids)
		for _, id := range ids {
			used[id] = true
		}
	}
	fert := 0
	for _, w := range []string{"Hello", " world", "Hello", " tokenization", "world"} {
		n := len(tok.Encode(w))
		words++
		fert += n
		if n > 1 {
			continued++
		}
	}
	if st.Bytes != int64(len(docs[0])+len(docs[1])) || st.Tokens != int64(tokens) || st.Words != int64(words) || st.VocabUsed != len(used) || st.VocabSize != tok.VocabSize() {
		t.Fatalf("%+v: want %d tokens, %d words, %d ids used", st, tokens, words, len(used))
	}
	if continued == 0 || st.ContinuedWords != float64(continued)/float64(words) || st.Fertility != float64(fert)/float64(words) {
		t.Fatalf("%+v: want continued %d/%d, fertility %d/%d", st, continued, words, fert, words)
	}
	if st.BytesPerToken != float64(st.Bytes)/float64(st.Tokens) || st.VocabUse != float64(st.VocabUsed)/float64(st.VocabSize) {
		t.Fatalf("%+v: ratios", st)
	}
	if z := tok.Stats(slices.Values([]string(nil))); z.Fertility != 0 || z.BytesPerToken != 0 || z.VocabSize != tok.VocabSize() {
		t.Fatalf("empty corpus: %+v", z)
	}
}
