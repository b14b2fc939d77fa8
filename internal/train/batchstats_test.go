package train

import (
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/stepvitals"
)

// TestBase64NeedsVocab: base64_data_* without a known tokenizer is refused
// by Preflight; a byte-level run's vocabulary is the bytes (the batch
// vitals themselves are internal/stepvitals').
func TestBase64NeedsVocab(t *testing.T) {
	bad := Options{Tokenizer: "/x/tokenizer.json"}
	bad.Debug.Base64DataAtStep = 3
	if err := checkVocab(&bad); err == nil || !strings.Contains(err.Error(), "debug.base64_data_at_step") {
		t.Errorf("base64 without a tokenizer: %v", err)
	}
	o := Options{Tokenizer: "bytes"}
	o.Model.Vocab = 256
	if _, ok := vocabFor(&o).(stepvitals.Bytes); !ok {
		t.Errorf("a byte-level run's vocabulary: %T, want stepvitals.Bytes", vocabFor(&o))
	}
}
