package checkpoint

import (
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
)

// TestStateByteLevel: "bytes", or no tokenizer with a 256-token model, is
// byte-level; a dataset, or no tokenizer with another vocabulary, is not.
func TestStateByteLevel(t *testing.T) {
	for _, tc := range []struct {
		tok   string
		vocab int
		want  bool
	}{{"bytes", 256, true}, {"bytes", 320, true}, {"", 256, true}, {"", 512, false}, {"${KESTREL_DATA}/ds", 256, false}} {
		if got := (State{Tokenizer: tc.tok, Model: model.Config{Vocab: tc.vocab}}).ByteLevel(); got != tc.want {
			t.Errorf("tokenizer %q vocab %d: %v", tc.tok, tc.vocab, got)
		}
	}
}

// TestOpenNoCheckpoint: a directory with no checkpoint is an error naming
// it and saying what is wanted.
func TestOpenNoCheckpoint(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, nil); err == nil || !strings.Contains(err.Error(), dir+": no checkpoint there") {
		t.Errorf("Open(empty): %v", err)
	}
	if _, _, err := LoadModel(dir, false, nil); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("LoadModel(empty): %v", err)
	}
}
