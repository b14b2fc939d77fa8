package loader

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// TestFromShards builds a small dataset with the shards writer (GPT-2 BPE
// from the shipped data) and checks that loader rows are windows of the
// shard streams, segment ids follow the manifest's document starts, and
// validation rows read the val split.
func TestFromShards(t *testing.T) {
	p, err := datadir.Path("gpt2-bpe")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	var docs []document.Doc
	for i := 0; i < 400; i++ {
		src := []string{"web", "code"}[i%2]
		docs = append(docs, document.Doc{ID: fmt.Sprintf("%s-%d", src, i), Source: src,
			Text: fmt.Sprintf("Document %d of %s: %s", i, src, strings.Repeat("words and more words ", 1+i%13))})
	}
	dir := t.TempDir()
	seq := func(yield func(document.Doc, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}
	if _, err := shards.Build(context.Background(), seq, tok, "gpt2-bpe", shards.Config{ShardTokens: 2000, ValFraction: 0.1, Seed: 3, Separator: "eos", Workers: 1}, dir); err != nil {
		t.Fatal(err)
	}
	sd, err := shards.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	ds, err := FromShards(sd)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Sources) != 2 || ds.Hash == "" {
		t.Fatalf("sources %d hash %q", len(ds.Sources), ds.Hash)
	}
	const T = 32
	l := mustNew(t, ds, testConfig(), Options{SeqLen: T})
	for step := 0; step < 10; step++ {
		o := fillStep(t, l, step, 8)
		info, err := l.BatchInfo(step)
		if err != nil {
			t.Fatal(err)
		}
		for r, ri := range info.Rows {
			st := ds.Sources[ri.SourceIndex].Train.(*shards.Stream)
			want := make([]int32, T+1)
			if err := st.ReadAt(want, ri.Offset); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.in[r*T:(r+1)*T], want[:T]) || !slices.Equal(o.tg[r*T:(r+1)*T], want[1:]) {
				t.Fatalf("step %d row %d differs from the shard stream at %d", step, r, ri.Offset)
			}
			seg := int32(0)
			for i := 0; i < T; i++ {
				if i > 0 && len(st.DocsIn(ri.Offset+int64(i), 1)) == 1 {
					seg++
				}
				if o.seg[r*T+i] != seg {
					t.Fatalf("step %d row %d pos %d: segment %d, want %d", step, r, i, o.seg[r*T+i], seg)
				}
			}
		}
	}
	for s := range ds.Sources {
		if l.ValRows(s) == 0 {
			t.Fatalf("source %d has no validation rows", s)
		}
		in, tg := make([]int32, T), make([]int32, T)
		if err := l.FillVal(s, 0, 1, in, tg, nil); err != nil {
			t.Fatal(err)
		}
		want := make([]int32, T)
		ds.Sources[s].Val.ReadAt(want, 0)
		if !slices.Equal(in, want) {
			t.Fatalf("val row 0 of source %d is not the start of the val split", s)
		}
	}
}
