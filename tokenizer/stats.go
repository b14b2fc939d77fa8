package tokenizer

import (
	"iter"
	"strings"
)

// Stats are the corpus statistics of a tokenizer (kestrel tokenizer stats).
type Stats struct {
	Bytes          int64   `json:"bytes"`
	Words          int64   `json:"words"` // whitespace-separated
	Tokens         int64   `json:"tokens"`
	Fertility      float64 `json:"fertility"`            // tokens per word
	BytesPerToken  float64 `json:"bytes_per_token"`      // compression
	ContinuedWords float64 `json:"continued_word_share"` // share of words split into more than one token
	VocabUsed      int     `json:"vocab_used"`           // ids that occur
	VocabSize      int     `json:"vocab_size"`
	VocabUse       float64 `json:"vocab_use"` // VocabUsed ÷ VocabSize
}

// Stats encodes every text of docs and measures: bytes per token,
// vocabulary use, and per whitespace-separated word (each word encoded as
// it appears in its line, with its leading space after the first) the
// fertility and the continued-word share.
func (t *Tokenizer) Stats(docs iter.Seq[string]) Stats {
	var st Stats
	used := make([]bool, t.VocabSize())
	var ids []int32
	for text := range docs {
		st.Bytes += int64(len(text))
		ids = t.AppendEncode(ids[:0], text)
		st.Tokens += int64(len(ids))
		for _, id := range ids {
			used[id] = true
		}
		for _, line := range strings.Split(text, "\n") {
			for i, w := range strings.Fields(line) {
				if i > 0 {
					w = " " + w
				}
				n := len(t.AppendEncode(ids[:0], w))
				st.Words++
				if n > 1 {
					st.ContinuedWords++
				}
				st.Fertility += float64(n)
			}
		}
	}
	for _, u := range used {
		if u {
			st.VocabUsed++
		}
	}
	st.VocabSize = t.VocabSize()
	if st.Words > 0 {
		st.Fertility /= float64(st.Words)
		st.ContinuedWords /= float64(st.Words)
	}
	if st.Tokens > 0 {
		st.BytesPerToken = float64(st.Bytes) / float64(st.Tokens)
	}
	st.VocabUse = float64(st.VocabUsed) / float64(st.VocabSize)
	return st
}
