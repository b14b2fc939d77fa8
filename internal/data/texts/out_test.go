package texts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/tokenizer"
)

// TestTrainTokenizerOutRule: tokenizer train --out never writes over one
// of its inputs (before: --out corpus.txt replaced the corpus with the
// tokenizer), a link or a directory; an existing tokenizer is replaced.
func TestTrainTokenizerOutRule(t *testing.T) {
	d := t.TempDir()
	corpus := filepath.Join(d, "corpus.txt")
	os.WriteFile(corpus, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", 50)), 0o644)
	os.Symlink(filepath.Join(d, "old.json"), filepath.Join(d, "link.json"))
	os.WriteFile(filepath.Join(d, "old.json"), []byte("{}"), 0o644)
	for _, tc := range []struct{ out, want string }{
		{corpus, "is an input of this command"},
		{filepath.Join(d, "link.json"), "is a symbolic link"},
		{d, "is a directory, not a regular file"},
	} {
		_, err := TrainTokenizer(context.Background(), []string{corpus}, tokenizer.TrainOptions{VocabSize: 300}, tc.out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--out %s: %v; want %q", tc.out, err, tc.want)
		}
	}
	out := filepath.Join(t.TempDir(), "tok.json")
	os.WriteFile(out, []byte("{}"), 0o644)
	if _, err := TrainTokenizer(context.Background(), []string{corpus}, tokenizer.TrainOptions{VocabSize: 300}, out); err != nil {
		t.Errorf("replacing an earlier tokenizer: %v", err)
	}
	if b, _ := os.ReadFile(corpus); !strings.HasPrefix(string(b), "the quick") {
		t.Error("the corpus was overwritten")
	}
}
