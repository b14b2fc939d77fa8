package tokbench

import (
	"context"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// TestSplit: pieces are at most 64 KiB, cut after a newline where there is
// one, and concatenate back to the input.
func TestSplit(t *testing.T) {
	long := strings.Repeat("abcdefghi\n", 20000) // 200,000 bytes
	noNL := strings.Repeat("x", 70000)
	for _, in := range []string{"", "short", long, noNL} {
		pieces := Split([]string{in})
		if strings.Join(pieces, "") != in {
			t.Fatalf("%d bytes: pieces do not join back", len(in))
		}
		for i, p := range pieces {
			if len(p) > 64<<10 {
				t.Fatalf("%d bytes: piece %d has %d bytes", len(in), i, len(p))
			}
			if in == long && i < len(pieces)-1 && !strings.HasSuffix(p, "\n") {
				t.Fatalf("piece %d does not end after a newline", i)
			}
		}
	}
}

// TestRun: both implementations report the same token count per thread
// count, kestrel with its ratio; no text is an error.
func TestRun(t *testing.T) {
	p, err := datadir.Path("gpt2-bpe")
	if err != nil {
		t.Fatal(err)
	}
	var got []Result
	docs := []string{"Hello world, this is a test.\n", "Numbers 12345 and  spaces\t\ttabs.\n"}
	if err := Run(context.Background(), Options{Tokenizer: p, Docs: docs, Threads: []int{1, 2}, Reps: 1, Emit: func(r Result) { got = append(got, r) }}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d results, want 4: %+v", len(got), got)
	}
	for i := 0; i < 4; i += 2 {
		ref, k := got[i], got[i+1]
		if ref.Impl != "tiktoken-go" || k.Impl != "kestrel" || ref.Tokens != k.Tokens || ref.Tokens == 0 || !(k.Ratio > 0) || ref.Ratio != 0 || k.Threads != 1+i/2 {
			t.Errorf("results %d, %d: %+v %+v", i, i+1, ref, k)
		}
	}
	if err := Run(context.Background(), Options{Tokenizer: p, Docs: []string{""}, Threads: []int{1}, Reps: 1, Emit: func(Result) {}}); err == nil {
		t.Error("no text accepted")
	}
}

// TestRunEncodings: cl100k_base runs against tiktoken-go's cl100k_base,
// counting the documents where regexp2 deviates (" \n \n" before a word);
// an unknown encoding is an error.
func TestRunEncodings(t *testing.T) {
	p, err := datadir.Path("tiktoken/cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	var got []Result
	docs := []string{"in 2000 years\n", "end . \n \n = = Title = =\n"}
	if err := Run(context.Background(), Options{Tokenizer: p, Encoding: "cl100k_base", Docs: docs, Threads: []int{1}, Reps: 1, Emit: func(r Result) { got = append(got, r) }}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].DocsDiffering != 1 || got[1].Encoding != "cl100k_base" {
		t.Fatalf("results %+v", got)
	}
	if err := Run(context.Background(), Options{Tokenizer: p, Encoding: "p99k", Docs: docs, Threads: []int{1}, Reps: 1, Emit: func(Result) {}}); err == nil || !strings.Contains(err.Error(), "p99k") {
		t.Fatalf("unknown encoding: %v", err)
	}
}
