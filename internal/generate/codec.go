package generate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/tokenizer"
)

// Codec maps text to token ids and back for a run.
type Codec struct {
	Encode func(string) ([]int32, error)
	Decode func([]int32) string
	// Start is the context of an empty prompt.
	Start []int32
	// Vocab, when > 0, is the tokenizer's size: ids at or above it (model
	// vocabulary padding) are never sampled.
	Vocab int
}

// BytesCodec is the codec of byte-level runs: one id per byte, and an
// empty prompt starts from a newline.
func BytesCodec() Codec {
	return Codec{
		Encode: func(s string) ([]int32, error) {
			ids := make([]int32, len(s))
			for i := 0; i < len(s); i++ {
				ids[i] = int32(s[i])
			}
			return ids, nil
		},
		Decode: func(ids []int32) string {
			b := make([]byte, len(ids))
			for i, id := range ids {
				b[i] = byte(id)
			}
			return string(b)
		},
		Start: []int32{'\n'},
	}
}

// CodecFor returns the codec of a run from its checkpoint state: bytes when
// state.json's tokenizer is "bytes" (or empty with a 256-token model),
// otherwise DatasetCodec.
func CodecFor(run string, st checkpoint.State) (Codec, error) {
	if st.ByteLevel() {
		return BytesCodec(), nil
	}
	if st.Tokenizer == "" {
		return Codec{}, fmt.Errorf("run %s: state.json names no tokenizer and model.vocab is %d, not 256 (bytes)", run, st.Model.Vocab)
	}
	return DatasetCodec(run, st)
}

// DatasetCodec loads the tokenizer of a run trained on a prepared dataset:
// state.json's Tokenizer is the dataset directory (data.path, possibly with
// ${KESTREL_DATA}), which holds tokenizer.json and manifest.json. An empty
// prompt starts from the dataset's document separator (the end-of-text token
// for separator = "eos", which precedes every document but the first; the
// beginning token for "bos").
func DatasetCodec(run string, st checkpoint.State) (Codec, error) {
	dir, err := st.DatasetDir()
	if err != nil {
		return Codec{}, fmt.Errorf("run %s: %w", run, err)
	}
	tokPath := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(tokPath); err != nil {
		return Codec{}, fmt.Errorf("run %s was trained on the dataset %s (state.json \"tokenizer\"), but %s cannot be read (%v): the dataset moved or was deleted; restore it there or symlink it", run, st.Tokenizer, tokPath, err)
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return Codec{}, fmt.Errorf("run %s: %w", run, err)
	}
	if tok.VocabSize() > st.Model.Vocab {
		return Codec{}, fmt.Errorf("run %s: %s has %d tokens but the model's vocabulary is %d: the dataset was rebuilt with another tokenizer", run, tokPath, tok.VocabSize(), st.Model.Vocab)
	}
	start, ok := tok.BOS()
	if !ok {
		return Codec{}, fmt.Errorf("run %s: %s has no end-of-text or beginning token to start an empty prompt from", run, tokPath)
	}
	var man struct {
		Separator   string `json:"separator"`
		SeparatorID int32  `json:"separator_id"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err == nil && json.Unmarshal(b, &man) == nil && man.Separator != "" {
		start = man.SeparatorID
	}
	return Codec{
		Encode: func(s string) ([]int32, error) { return tok.Encode(s), nil },
		Decode: tok.DecodeString,
		Start:  []int32{start},
		Vocab:  tok.VocabSize(),
	}, nil
}
