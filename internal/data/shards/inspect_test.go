package shards

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// TestSampleDocs: documents are evenly spaced, decode to their text (after
// the separator), and carry their ids and token ranges; TrainPercent sums
// to 100 over the sources.
func TestSampleDocs(t *testing.T) {
	p, err := datadir.Path("gpt2-bpe")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	docs := func(yield func(document.Doc, error) bool) {
		for i := 0; i < 40; i++ {
			src := []string{"web", "math"}[i%2]
			if !yield(document.Doc{ID: fmt.Sprint(i), Source: src, Text: fmt.Sprintf("%s document number %d.", src, i)}, nil) {
				return
			}
		}
	}
	if _, err := Build(context.Background(), docs, tok, p, Config{ShardTokens: 50, Separator: "eos"}, dir); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	st, err := ds.Stream("math", Train)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.SampleDocs(tok, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Index != 0 || got[1].Index != st.NumDocs()/4 {
		t.Fatalf("%d docs, first indices %v", len(got), got)
	}
	for _, d := range got {
		if !strings.Contains(d.Text, "math document number "+d.ID+".") || d.Start != st.DocStart(d.Index) || d.Tokens == 0 {
			t.Errorf("%+v", d)
		}
	}
	if all, _ := st.SampleDocs(tok, 1000); int64(len(all)) != st.NumDocs() {
		t.Errorf("n > docs: %d of %d", len(all), st.NumDocs())
	}
	m := ds.Manifest()
	if sum := m.TrainPercent("web") + m.TrainPercent("math"); sum < 99.999 || sum > 100.001 || m.TrainPercent("none") != 0 {
		t.Errorf("train percent: %v", sum)
	}
}

// TestInspect: Inspect returns the manifest and, per source (or the one
// asked for), its split's size and sample documents cut to MaxChars
// runes with an ellipsis; a bad split is refused before the dataset is
// read, and an unknown source fails with the header kept.
func TestInspect(t *testing.T) {
	p, err := datadir.Path("gpt2-bpe")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	docs := func(yield func(document.Doc, error) bool) {
		for i := 0; i < 20; i++ {
			src := []string{"web", "math"}[i%2]
			if !yield(document.Doc{ID: fmt.Sprint(i), Source: src, Text: fmt.Sprintf("%s document number %d.", src, i)}, nil) {
				return
			}
		}
	}
	if _, err := Build(context.Background(), docs, tok, p, Config{ShardTokens: 50, Separator: "eos"}, dir); err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(dir, InspectOptions{Split: Train, N: 2, MaxChars: 8})
	if err != nil {
		t.Fatal(err)
	}
	if in.Dir != dir || in.Manifest == nil || !in.Counted || len(in.Legacy) != 0 || len(in.Sources) != 2 {
		t.Fatalf("inspection %+v", in)
	}
	for _, s := range in.Sources {
		if s.Tokens == 0 || s.Docs == 0 || s.Shards == 0 || len(s.Samples) != 2 {
			t.Errorf("%s: %+v", s.Source, s)
		}
		for _, d := range s.Samples {
			if r := []rune(d.Text); len(r) != 10 || string(r[8:]) != " …" {
				t.Errorf("%s: text %q not cut to 8 runes and an ellipsis", s.Source, d.Text)
			}
		}
	}
	if in, err := Inspect(dir, InspectOptions{Source: "math", Split: Val, N: 1}); err != nil || len(in.Sources) != 1 || in.Sources[0].Source != "math" || in.Split != Val {
		t.Errorf("--source math --split val: %+v, %v", in, err)
	}
	if in, err := Inspect(dir, InspectOptions{Split: "test"}); err == nil || in != nil || !strings.Contains(err.Error(), "--split") {
		t.Errorf("split test: %+v, %v", in, err)
	}
	if in, err := Inspect(dir, InspectOptions{Source: "none", Split: Train}); err == nil || in == nil || in.Manifest == nil || len(in.Sources) != 0 {
		t.Errorf("unknown source: %+v, %v", in, err)
	}
}
