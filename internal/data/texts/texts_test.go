package texts

import (
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func collect(inputs ...string) ([]string, error) {
	var err error
	var out []string
	for s := range Read(inputs, &err) {
		out = append(out, s)
	}
	return out, err
}

// TestRead: each input kind gives its texts in order; errors name the file
// (and line for JSON).
func TestRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), `{"text":"one","id":"x"}`+"\n"+`{"b":"second","a":"first","n":3}`+"\n")
	write(t, filepath.Join(dir, "plain.txt"), "line 1\nline 2\n")
	write(t, filepath.Join(dir, "tree", "x.txt"), "in a tree\n")
	write(t, filepath.Join(dir, "tree", ".hidden"), "skipped\n")
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"text":"zipped"}` + "\n"))
	zw.Close()
	write(t, filepath.Join(dir, "d.json.gz"), gz.String())
	write(t, filepath.Join(dir, "bad.jsonl"), `{"text":"ok"}`+"\n{broken\n")

	for _, c := range []struct {
		in   []string
		want []string
	}{
		{[]string{filepath.Join(dir, "a.jsonl")}, []string{"one", "first", "second"}},
		{[]string{filepath.Join(dir, "plain.txt")}, []string{"line 1\nline 2\n"}},
		{[]string{filepath.Join(dir, "tree")}, []string{"in a tree\n"}},
		{[]string{filepath.Join(dir, "d.json.gz")}, []string{"zipped"}},
		{[]string{filepath.Join(dir, "*.txt")}, []string{"line 1\nline 2\n"}},
	} {
		got, err := collect(c.in...)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%v: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := collect(filepath.Join(dir, "bad.jsonl")); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("bad JSON line: %v", err)
	}
	if _, err := collect(filepath.Join(dir, "missing.txt")); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("missing input: %v", err)
	}
}

// TestReadDataset: a prepared dataset yields its training documents
// decoded, without the separator token.
func TestReadDataset(t *testing.T) {
	p, err := datadir.Path("gpt2-bpe")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	want := []string{"alpha document.", "beta document.", "gamma document."}
	docs := func(yield func(document.Doc, error) bool) {
		for i, s := range want {
			if !yield(document.Doc{ID: s, Source: "web", Text: want[i]}, nil) {
				return
			}
		}
	}
	if _, err := shards.Build(context.Background(), docs, tok, p, shards.Config{ShardTokens: 50, Separator: "eos"}, dir); err != nil {
		t.Fatal(err)
	}
	got, err := collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("dataset texts %q, want %q", got, want)
	}
}
