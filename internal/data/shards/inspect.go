package shards

import (
	"fmt"
	"io"
	"strings"

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

// Inspect prints the dataset in dir for a person: its tokenizer, per-source
// token and document counts and shares, then sample documents of each
// source decoded back to text with their token ranges (`kestrel data
// inspect`). Every shard read is verified against its sha256.
func Inspect(out io.Writer, dir string, o InspectOptions) error {
	if o.Split != Train && o.Split != Val {
		return fmt.Errorf("data inspect: --split %q: want train or val", o.Split)
	}
	ds, err := Open(dir)
	if err != nil {
		return err
	}
	defer ds.Close()
	tok, err := ds.Tokenizer()
	if err != nil {
		return err
	}
	m := ds.Manifest()
	fmt.Fprintf(out, "dataset %s  hash %s\n", dir, m.DatasetHash[:16])
	fmt.Fprintf(out, "tokenizer %s  vocab %d  hash %s  separator %s (%d)  %d-byte tokens\n", m.Tokenizer.File, m.Tokenizer.VocabSize, m.Tokenizer.Hash[:16], m.Separator, m.SeparatorID, m.TokenBytes)
	fmt.Fprintf(out, "%d shards, %d tokens, %d documents\n\n", len(m.Shards), m.TotalTokens, m.TotalDocs)
	if legacy, err := ds.LegacyShards(); err != nil {
		return err
	} else if len(legacy) > 0 {
		fmt.Fprintf(out, "note: %d uint32 shards carry kestrel's old header version 1 (e.g. %s): kestrel reads them, llm.c rejects them; re-run kestrel data prepare into a new directory for version 7\n\n", len(legacy), legacy[0])
	}
	fmt.Fprintf(out, "%-16s %14s %8s %10s %14s %10s\n", "source", "train tokens", "share", "train docs", "val tokens", "val docs")
	for _, s := range m.Sources {
		fmt.Fprintf(out, "%-16s %14d %7.2f%% %10d %14d %10d\n", s.Source, s.TrainTokens, m.TrainPercent(s.Source), s.TrainDocs, s.ValTokens, s.ValDocs)
	}
	sources := ds.Sources()
	if o.Source != "" {
		sources = []string{o.Source}
	}
	for _, src := range sources {
		st, err := ds.Stream(src, o.Split)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\n== %s/%s: %d tokens, %d documents, %d shards\n", src, o.Split, st.Len(), st.NumDocs(), len(ds.Shards(src, o.Split)))
		docs, err := st.SampleDocs(tok, o.N)
		if err != nil {
			return fmt.Errorf("data inspect: %s/%s: %w", src, o.Split, err)
		}
		for _, d := range docs {
			text := d.Text
			if o.MaxChars > 0 && len([]rune(text)) > o.MaxChars {
				text = string([]rune(text)[:o.MaxChars]) + " …"
			}
			fmt.Fprintf(out, "-- document %d (id %q): tokens [%d, %d) (%d tokens)\n%s\n", d.Index, d.ID, d.Start, d.Start+int64(d.Tokens), d.Tokens, strings.TrimRight(text, "\n"))
		}
	}
	return nil
}
