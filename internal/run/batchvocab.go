package run

import (
	"fmt"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// datasetVocab loads the tokenizer of the prepared dataset at path for the
// trainer's batch vitals (bytes per token, the share of non-letter bytes),
// the decoded first row in the log and debug.base64_data_*.
func datasetVocab(path string) (train.Vocabulary, error) {
	dir, err := datadir.Expand(path)
	if err != nil {
		return nil, fmt.Errorf("data.path: %w", err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return tok, nil
}
