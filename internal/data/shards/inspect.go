package shards

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/tokenizer"
)

// DecodedDoc is one document of a stream decoded back to text, with where
// its tokens lie in the stream: [Start, Start+Tokens).
type DecodedDoc struct {
	Index  int64  // document index in the stream
	ID     string // the document's id from the source
	Start  int64
	Tokens int
	Text   string // every token decoded, separators included
}

// SampleDocs decodes n documents evenly spaced through the stream (all of
// them when it has at most n) with tok, the "decode a batch" check of
// kestrel data inspect. Shards read are verified against their sha256.
func (s *Stream) SampleDocs(tok *tokenizer.Tokenizer, n int) ([]DecodedDoc, error) {
	docs := s.NumDocs()
	var out []DecodedDoc
	for k := 0; k < n && int64(k) < docs; k++ {
		i := int64(k) * docs / int64(min(int64(n), docs))
		toks, err := s.Doc(i)
		if err != nil {
			return out, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, DecodedDoc{Index: i, ID: s.DocID(i), Start: s.DocStart(i), Tokens: len(toks), Text: tok.DecodeString(toks)})
	}
	return out, nil
}

// TrainPercent is the percentage of the training tokens that source holds
// (0 for an empty dataset or an unknown source).
func (m *Manifest) TrainPercent(source string) float64 {
	var total, mine int64
	for _, s := range m.Sources {
		total += s.TrainTokens
		if s.Source == source {
			mine = s.TrainTokens
		}
	}
	if total == 0 {
		return 0
	}
	return 100 * float64(mine) / float64(total)
}
