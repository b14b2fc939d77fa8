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

// InspectOptions say what Inspect decodes: N documents per source (or of
// Source only) of the Split, each cut to MaxChars characters (0 = all).
type InspectOptions struct {
	Source, Split string
	N, MaxChars   int
}

// Inspection is what kestrel data inspect shows of a dataset: its
// manifest (tokenizer, per-source counts), the shards still in the old
// header version, and sample documents of each source's split.
type Inspection struct {
	Dir      string
	Manifest *Manifest
	// Counted is true once the legacy shards were checked: the per-source
	// table follows the header (an Inspection cut short by an error before
	// it has the header alone).
	Counted bool
	Legacy  []string // uint32 shards with header version 1
	Split   string
	Sources []SourceSample
}

// SourceSample is one source's split as kestrel data inspect shows it: its
// size and its sample documents (cut to MaxChars characters).
type SourceSample struct {
	Source       string
	Tokens, Docs int64
	Shards       int
	Samples      []DecodedDoc
}

// Inspect reads the dataset in dir for a person: its tokenizer, per-source
// token and document counts and shares, then sample documents of each
// source decoded back to text with their token ranges (`kestrel data
// inspect`; cmd/kestrel/internal/show prints it). Every shard read is
// verified against its sha256. On an error after the dataset opened, the
// Inspection holds what was read before it (the command prints that much,
// then the error).
func Inspect(dir string, o InspectOptions) (*Inspection, error) {
	if o.Split != Train && o.Split != Val {
		return nil, fmt.Errorf("data inspect: --split %q: want train or val", o.Split)
	}
	ds, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	tok, err := ds.Tokenizer()
	if err != nil {
		return nil, err
	}
	in := &Inspection{Dir: dir, Manifest: ds.Manifest(), Split: o.Split}
	if in.Legacy, err = ds.LegacyShards(); err != nil {
		return in, err
	}
	in.Counted = true
	sources := ds.Sources()
	if o.Source != "" {
		sources = []string{o.Source}
	}
	for _, src := range sources {
		st, err := ds.Stream(src, o.Split)
		if err != nil {
			return in, err
		}
		in.Sources = append(in.Sources, SourceSample{Source: src, Tokens: st.Len(), Docs: st.NumDocs(), Shards: len(ds.Shards(src, o.Split))})
		docs, err := st.SampleDocs(tok, o.N)
		if err != nil {
			return in, fmt.Errorf("data inspect: %s/%s: %w", src, o.Split, err)
		}
		for i := range docs {
			if o.MaxChars > 0 && len([]rune(docs[i].Text)) > o.MaxChars {
				docs[i].Text = string([]rune(docs[i].Text)[:o.MaxChars]) + " …"
			}
		}
		in.Sources[len(in.Sources)-1].Samples = docs
	}
	return in, nil
}
