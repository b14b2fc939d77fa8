package shards

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMergeMatchesOneBuild: parts built from consecutive slices of the
// documents and merged in order give the token streams, document starts
// and ids of one build over all of them.
func TestMergeMatchesOneBuild(t *testing.T) {
	tok := gpt2(t)
	docs := testDocs(240)
	cfg := Config{ShardTokens: 700, ValFraction: 0.2, Seed: 7, Separator: "eos", Workers: 2}
	one := t.TempDir()
	if _, err := Build(context.Background(), seq(docs, -1), tok, "gpt2-bpe", cfg, one); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cuts := []int{0, 17, 100, 101, 240}
	var parts []string
	for i := 0; i+1 < len(cuts); i++ {
		p := filepath.Join("tokens", "p"+string(rune('a'+i)))
		parts = append(parts, p)
		if _, err := Build(context.Background(), seq(docs[cuts[i]:cuts[i+1]], -1), tok, "gpt2-bpe", cfg, filepath.Join(out, p)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Merge(out, parts)
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalDocs != int64(len(docs)) {
		t.Errorf("merged %d docs, want %d", m.TotalDocs, len(docs))
	}
	a, err := Open(one)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Sources(), b.Sources()) || !slices.Equal(a.Manifest().Sources, b.Manifest().Sources) {
		t.Fatalf("sources %v %+v vs %v %+v", a.Sources(), a.Manifest().Sources, b.Sources(), b.Manifest().Sources)
	}
	for _, src := range a.Sources() {
		for _, split := range []string{Train, Val} {
			sa, _ := a.Stream(src, split)
			sb, _ := b.Stream(src, split)
			ta, tb := make([]int32, sa.Len()), make([]int32, sb.Len())
			if err := sa.ReadAt(ta, 0); err != nil {
				t.Fatal(err)
			}
			if err := sb.ReadAt(tb, 0); err != nil {
				t.Fatal(err)
			}
			ia, _ := sa.DocIDs()
			ib, _ := sb.DocIDs()
			if len(ta) == 0 || !slices.Equal(ta, tb) || !slices.Equal(sa.DocStarts(), sb.DocStarts()) || !slices.Equal(ia, ib) {
				t.Errorf("%s/%s: merged stream differs (%d vs %d tokens, %d vs %d docs)", src, split, len(ta), len(tb), len(ia), len(ib))
			}
		}
	}
	ja, _ := os.ReadFile(filepath.Join(one, "tokenizer.json"))
	jb, _ := os.ReadFile(filepath.Join(out, "tokenizer.json"))
	if len(ja) == 0 || !bytes.Equal(ja, jb) {
		t.Error("tokenizer.json differs")
	}
}

func TestMergeErrors(t *testing.T) {
	tok := gpt2(t)
	out := t.TempDir()
	cfg := Config{ShardTokens: 700, ValFraction: 0.2, Seed: 7, Separator: "eos"}
	if _, err := Build(context.Background(), seq(testDocs(10), -1), tok, "gpt2-bpe", cfg, filepath.Join(out, "a")); err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 8
	if _, err := Build(context.Background(), seq(testDocs(10), -1), tok, "gpt2-bpe", cfg, filepath.Join(out, "b")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		parts []string
		want  string
	}{
		{nil, "no parts"},
		{[]string{"a", "b"}, "part b was built with other settings"},
		{[]string{"a", "../x"}, "must be a directory inside"},
		{[]string{"a", "missing"}, "missing"},
	}
	for _, c := range cases {
		if _, err := Merge(out, c.parts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Merge(%v): %v, want %q", c.parts, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); !os.IsNotExist(err) {
		t.Errorf("a failed merge wrote manifest.json: %v", err)
	}
}
