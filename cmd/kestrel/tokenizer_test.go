package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

func runCmd(t *testing.T, cmd *cobra.Command, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// TestTokenizerCLI trains a tokenizer, encodes and decodes with it (exact
// bytes back, one JSON array per line), reports stats, and rejects bad ids.
func TestTokenizerCLI(t *testing.T) {
	in, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok.json")
	if out, err := runCmd(t, newTokenizerCmd(), "", "train", "--input", in, "--vocab-size", "600", "--pattern", "llama3", "--out", tok, "--quiet"); err != nil || !strings.Contains(out, "600 tokens") {
		t.Fatalf("train: %v\n%s", err, out)
	}
	text := "First Citizen:\nBefore we proceed any further, hear me speak 12345.\n\xff bytes 😀\n"
	ids, err := runCmd(t, newTokenizerCmd(), text, "encode", "--tokenizer", tok, "--lines")
	if err != nil || strings.Count(ids, "\n") != 3 || !strings.HasPrefix(ids, "[") {
		t.Fatalf("encode --lines: %v\n%s", err, ids)
	}
	back, err := runCmd(t, newTokenizerCmd(), ids, "decode", "--tokenizer", tok)
	if err != nil || back != text {
		t.Fatalf("decode: %v\n%q", err, back)
	}
	plain, err := runCmd(t, newTokenizerCmd(), text, "encode", "--tokenizer", tok)
	if err != nil {
		t.Fatal(err)
	}
	back, err = runCmd(t, newTokenizerCmd(), plain, "decode", "--tokenizer", tok)
	if err != nil || back != text {
		t.Fatalf("decode plain: %v\n%q", err, back)
	}
	if _, err := runCmd(t, newTokenizerCmd(), "[1, 70000]\n", "decode", "--tokenizer", tok); err == nil || !strings.Contains(err.Error(), "70000") {
		t.Fatalf("bad id: %v", err)
	}
	out, err := runCmd(t, newTokenizerCmd(), "", "stats", "--tokenizer", tok, "--json", in)
	if err != nil || !strings.Contains(out, `"fertility"`) || !strings.Contains(out, `"continued_word_share"`) {
		t.Fatalf("stats: %v\n%s", err, out)
	}
	if _, err := runCmd(t, newTokenizerCmd(), "", "encode", "--tokenizer", filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing tokenizer: %v", err)
	}
}

func TestDataInspectCLI(t *testing.T) {
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
	if _, err := shards.Build(context.Background(), docs, tok, p, shards.Config{ShardTokens: 50, ValFraction: 0.2, Separator: "eos"}, dir); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, newDataInspectCmd(), "", dir, "--source", "math", "--n", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".<|endoftext|>", "math document number ", "tokens [0, ", "web ", "math "} {
		if !strings.Contains(out, want) {
			t.Fatalf("inspect output lacks %q:\n%s", want, out)
		}
	}
	if _, err := runCmd(t, newDataInspectCmd(), "", dir, "--source", "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown source: %v", err)
	}
	if _, err := runCmd(t, newDataInspectCmd(), "", filepath.Join(dir, "none")); err == nil {
		t.Fatal("missing dataset accepted")
	}
}
