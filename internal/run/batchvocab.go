package run

import (
	"fmt"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// datasetVocab loads the tokenizer of the prepared dataset in dir (resolved) for the
// trainer's batch vitals (bytes per token, the share of non-letter bytes),
// the decoded first row in the log and debug.base64_data_*.
func datasetVocab(dir string) (train.Vocabulary, error) {
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	}
	return tok, nil
}
