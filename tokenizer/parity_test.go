package tokenizer

import (
	"slices"
	"testing"

	tiktoken "github.com/tiktoken-go/tokenizer"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// TestGPT2Parity loads the shipped GPT-2 files in each format and checks
// that every shipped text encodes to exactly the ids of tiktoken-go's
// r50k_base (OpenAI GPT-2), and decodes back to the same bytes.
func TestGPT2Parity(t *testing.T) {
	texts := shipped(t)
	ref, err := tiktoken.Get(tiktoken.R50kBase)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]int32, len(texts))
	total := 0
	for i, s := range texts {
		ids, _, err := ref.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		w := make([]int32, len(ids))
		for k, id := range ids {
			w[k] = int32(id)
		}
		want[i] = w
		total += len(s)
	}
	// the directory loads its *.tiktoken file: same tokenizer, same hash
	dirTok, err := Load(mustPath(t, "gpt2-bpe"))
	if err != nil {
		t.Fatal(err)
	}
	rankTok, err := Load(mustPath(t, "gpt2-bpe/r50k_base.tiktoken"))
	if err != nil {
		t.Fatal(err)
	}
	if dirTok.Hash() != rankTok.Hash() {
		t.Fatal("gpt2-bpe directory and its r50k_base.tiktoken load differently")
	}
	for _, rel := range []string{"gpt2-bpe/r50k_base.tiktoken", "gpt2-bpe/vocab.json"} {
		t.Run(rel, func(t *testing.T) {
			p, err := datadir.Path(rel)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if tok.VocabSize() != 50257 || tok.EOT() != 50256 {
				t.Fatalf("vocab %d eot %d, want 50257 and 50256", tok.VocabSize(), tok.EOT())
			}
			bad := 0
			for i, s := range texts {
				got := tok.Encode(s)
				if !slices.Equal(got, want[i]) {
					if bad < 5 {
						t.Errorf("text %d %q:\n got %v\nwant %v", i, trunc(s), got, want[i])
					}
					bad++
				}
				if d := tok.DecodeString(got); d != s {
					t.Errorf("text %d: decode differs", i)
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d texts differ from tiktoken-go r50k_base", bad, len(texts))
			}
			t.Logf("%d texts, %d bytes: identical to tiktoken-go", len(texts), total)
		})
	}
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func mustPath(t testing.TB, rel string) string {
	t.Helper()
	p, err := datadir.Path(rel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
