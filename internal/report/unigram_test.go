package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

func TestUnigramBaseline(t *testing.T) {
	p, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	paras := strings.Split(string(raw[:200000]), "\n\n")
	tok, err := tokenizer.Train(context.Background(), func(yield func(string) bool) {
		for _, s := range paras {
			if !yield(s) {
				return
			}
		}
	}, tokenizer.TrainOptions{VocabSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokPath := filepath.Join(dir, "tok.json")
	if err := tok.Save(tokPath); err != nil {
		t.Fatal(err)
	}
	cfg := shards.DefaultConfig()
	cfg.ValFraction = 0.2
	out := filepath.Join(dir, "ds")
	docs := func(yield func(document.Doc, error) bool) {
		for i, s := range paras {
			if !yield(document.Doc{ID: fmt.Sprintf("books:%d", i), Source: "books", Text: s}, nil) {
				return
			}
		}
	}
	if _, err := shards.Build(context.Background(), docs, tok, tokPath, cfg, out); err != nil {
		t.Fatal(err)
	}
	b, err := UnigramBaseline(out)
	if err != nil {
		t.Fatal(err)
	}
	// Between a perfect predictor and the uniform distribution, and close
	// to what English text gives a small BPE (a few nats).
	if !(b > 2 && b < math.Log(float64(tok.VocabSize()))) {
		t.Fatalf("unigram baseline %.3f outside (2, ln %d = %.3f)", b, tok.VocabSize(), math.Log(float64(tok.VocabSize())))
	}
	t.Logf("unigram baseline %.3f nats/token (uniform %.3f)", b, math.Log(float64(tok.VocabSize())))
	if _, err := UnigramBaseline(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing dataset: no error")
	}
}

func TestUnigramBytes(t *testing.T) {
	cases := []struct {
		name       string
		train, val string
		want       float64
	}{
		{"empty train", "", "a", math.NaN()},
		{"empty val", "a", "", math.NaN()},
		// 'a' seen 2 of 2 times: (2+1)/(2+256)
		{"seen byte", "aa", "a", -math.Log(3.0 / 258)},
		// 'b' never seen: (0+1)/(2+256)
		{"unseen byte", "aa", "b", -math.Log(1.0 / 258)},
		{"mean over val", "aa", "ab", -(math.Log(3.0/258) + math.Log(1.0/258)) / 2},
	}
	for _, c := range cases {
		got := UnigramBytes([]byte(c.train), []byte(c.val))
		if math.IsNaN(c.want) != math.IsNaN(got) || !math.IsNaN(c.want) && math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
