package show

import (
	"fmt"
	"io"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// DataInspect prints what shards.Inspect read of a dataset for a person:
// the dataset, its tokenizer and size, a note on shards in the old header
// version, the per-source table, then each source's sample documents with
// their token ranges. An Inspection cut short by an error prints as far as
// it got.
func DataInspect(out io.Writer, in *shards.Inspection) {
	if in == nil {
		return
	}
	m := in.Manifest
	fmt.Fprintf(out, "dataset %s  hash %s\n", in.Dir, m.DatasetHash[:16])
	fmt.Fprintf(out, "tokenizer %s  vocab %d  hash %s  separator %s (%d)  %d-byte tokens\n", m.Tokenizer.File, m.Tokenizer.VocabSize, m.Tokenizer.Hash[:16], m.Separator, m.SeparatorID, m.TokenBytes)
	fmt.Fprintf(out, "%d shards, %d tokens, %d documents\n\n", len(m.Shards), m.TotalTokens, m.TotalDocs)
	if !in.Counted {
		return
	}
	if len(in.Legacy) > 0 {
		fmt.Fprintf(out, "note: %d uint32 shards carry kestrel's old header version 1 (e.g. %s): kestrel reads them, llm.c rejects them; re-run kestrel data prepare into a new directory for version 7\n\n", len(in.Legacy), in.Legacy[0])
	}
	fmt.Fprintf(out, "%-16s %14s %8s %10s %14s %10s\n", "source", "train tokens", "share", "train docs", "val tokens", "val docs")
	for _, s := range m.Sources {
		fmt.Fprintf(out, "%-16s %14d %7.2f%% %10d %14d %10d\n", s.Source, s.TrainTokens, m.TrainPercent(s.Source), s.TrainDocs, s.ValTokens, s.ValDocs)
	}
	for _, s := range in.Sources {
		fmt.Fprintf(out, "\n== %s/%s: %d tokens, %d documents, %d shards\n", s.Source, in.Split, s.Tokens, s.Docs, s.Shards)
		for _, d := range s.Samples {
			fmt.Fprintf(out, "-- document %d (id %q): tokens [%d, %d) (%d tokens)\n%s\n", d.Index, d.ID, d.Start, d.Start+int64(d.Tokens), d.Tokens, strings.TrimRight(d.Text, "\n"))
		}
	}
}
