package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// TiktokenEncoding is what a tiktoken rank file does not hold: the
// encoding's pre-tokenizer regex and its special tokens. It is read from
// NAME.json beside NAME.tiktoken ({"pat_str": …, "special_tokens": {…}},
// the layout of js-tiktoken's ranks and of ../shared/data/tiktoken).
type TiktokenEncoding struct {
	Pattern       string           `json:"pat_str"`
	SpecialTokens map[string]int32 `json:"special_tokens"`
}

// knownEncodings are used when a rank file named after an OpenAI encoding
// has no JSON beside it.
var knownEncodings = map[string]TiktokenEncoding{
	"r50k_base": {Pattern: GPT2Pattern, SpecialTokens: map[string]int32{"<|endoftext|>": 50256}},
	"cl100k_base": {Pattern: Cl100kPattern, SpecialTokens: map[string]int32{
		"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
		"<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}},
	"o200k_base": {Pattern: O200kPattern, SpecialTokens: map[string]int32{
		"<|endoftext|>": 199999, "<|endofprompt|>": 200018}},
}

// tiktokenEncoding returns the encoding of the rank file at path holding
// ranks 0..n-1: NAME.json beside it when present, else the built-in
// description of a known OpenAI encoding (r50k_base, cl100k_base,
// o200k_base) by file name, else GPT-2's pattern with <|endoftext|> right
// after the last rank (as in r50k_base).
func tiktokenEncoding(path string, n int) (TiktokenEncoding, error) {
	base := strings.TrimSuffix(path, ".tiktoken")
	js := base + ".json"
	b, err := os.ReadFile(js)
	switch {
	case err == nil:
		var enc TiktokenEncoding
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(&enc); err != nil {
			return enc, fmt.Errorf("%s: %w", js, err)
		}
		if enc.Pattern == "" {
			return enc, fmt.Errorf("%s: field pat_str is missing", js)
		}
		for name, id := range enc.SpecialTokens {
			if id < int32(n) {
				return enc, fmt.Errorf("%s: special_tokens[%q] = %d collides with the ranks 0..%d", js, name, id, n-1)
			}
			if id >= 1<<26 {
				return enc, fmt.Errorf("%s: special_tokens[%q] = %d is out of range", js, name, id)
			}
		}
		return enc, nil
	case !errors.Is(err, fs.ErrNotExist):
		return TiktokenEncoding{}, err
	}
	if enc, ok := knownEncodings[filepath.Base(base)]; ok {
		return enc, nil
	}
	return TiktokenEncoding{Pattern: GPT2Pattern, SpecialTokens: map[string]int32{"<|endoftext|>": int32(n)}}, nil
}

// special returns the encoding's special tokens sorted by id.
func (e TiktokenEncoding) special() []AddedToken {
	out := make([]AddedToken, 0, len(e.SpecialTokens))
	for name, id := range e.SpecialTokens {
		out = append(out, AddedToken{ID: id, Content: name, Special: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LoadOptions change how Load reads a tokenizer.
type LoadOptions struct {
	// Pattern, when set, replaces the file's pre-tokenizer: a name
	// (gpt2, llama3, cl100k, o200k) or a regular expression.
	Pattern string
}

// LoadWith is Load with options.
func LoadWith(path string, opts LoadOptions) (*Tokenizer, error) {
	t, err := Load(path)
	if err != nil {
		return nil, err
	}
	if opts.Pattern != "" {
		if t.split, t.pattern, err = newSplitter(opts.Pattern); err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", path, err)
		}
	}
	return t, nil
}
