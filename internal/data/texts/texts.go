// Package texts reads text for the tokenizer commands and benchmarks: plain
// and gzipped files, JSON lines, directories, and prepared datasets (whose
// training documents are decoded with the dataset's tokenizer). It sits
// just above internal/data/shards.
package texts

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// Read yields the texts of the inputs (files, globs or directories, their
// ${KESTREL_DATA} resolved by the command's flags): a JSONL file gives the
// "text" field of each record (or every string field when there is none);
// .gz files are decompressed; other files are read in chunks of whole lines
// (about 1 MiB); a directory with manifest.json is a prepared dataset whose
// training documents are decoded; other directories are walked.
//
// The first error (a missing input, a malformed JSON line named by file and
// line, a dataset that fails its checks) ends the sequence and is stored in
// *errp, which the caller checks after ranging.
func Read(inputs []string, errp *error) iter.Seq[string] {
	return func(yield func(string) bool) {
		var files []string
		for _, in := range inputs {
			p := in
			matches, _ := filepath.Glob(p)
			if len(matches) == 0 {
				matches = []string{p}
			}
			for _, m := range matches {
				st, err := os.Stat(m)
				if err != nil {
					*errp = fmt.Errorf("input %s: %w", m, err)
					return
				}
				if !st.IsDir() {
					files = append(files, m)
					continue
				}
				if _, err := os.Stat(filepath.Join(m, "manifest.json")); err == nil {
					if !datasetTexts(m, yield, errp) {
						return
					}
					continue
				}
				filepath.WalkDir(m, func(p string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
						files = append(files, p)
					}
					return nil
				})
			}
		}
		for _, f := range files {
			if !fileTexts(f, yield, errp) {
				return
			}
		}
	}
}

// datasetTexts decodes the training documents of a prepared dataset, every
// source in manifest order, without separator or other added tokens.
func datasetTexts(dir string, yield func(string) bool, errp *error) bool {
	ds, err := shards.Open(dir)
	if err != nil {
		*errp = err
		return false
	}
	defer ds.Close()
	tok, err := ds.Tokenizer()
	if err != nil {
		*errp = err
		return false
	}
	for _, src := range ds.Sources() {
		st, err := ds.Stream(src, shards.Train)
		if err != nil {
			*errp = err
			return false
		}
		for i := int64(0); i < st.NumDocs(); i++ {
			doc, err := st.Doc(i)
			if err != nil {
				*errp = err
				return false
			}
			ids := make([]int32, 0, len(doc))
			for _, id := range doc {
				if !tok.ValidID(id) || tok.IsAdded(id) {
					continue
				}
				ids = append(ids, id)
			}
			if !yield(tok.DecodeString(ids)) {
				return false
			}
		}
	}
	return true
}

// fileTexts yields the texts of one file (see Read).
func fileTexts(path string, yield func(string) bool, errp *error) bool {
	f, err := os.Open(path)
	if err != nil {
		*errp = fmt.Errorf("input %s: %w", path, err)
		return false
	}
	defer f.Close()
	var r io.Reader = f
	name := path
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			*errp = fmt.Errorf("input %s: %w", path, err)
			return false
		}
		r = zr
		name = strings.TrimSuffix(name, ".gz")
	}
	br := bufio.NewReaderSize(r, 1<<20)
	// JSON lines: .jsonl, .ndjson, and gzipped .json (Dolma's layout)
	jsonl := strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".ndjson") || (name != path && strings.HasSuffix(name, ".json"))
	var chunk strings.Builder
	lineNo := 0
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			lineNo++
			if jsonl {
				var rec map[string]any
				if e := json.Unmarshal([]byte(line), &rec); e != nil {
					*errp = fmt.Errorf("input %s:%d: %w", path, lineNo, e)
					return false
				}
				if t, ok := rec["text"].(string); ok {
					if !yield(t) {
						return false
					}
				} else {
					keys := make([]string, 0, len(rec))
					for k := range rec {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						if s, ok := rec[k].(string); ok && !yield(s) {
							return false
						}
					}
				}
			} else {
				chunk.WriteString(line)
				if chunk.Len() >= 1<<20 {
					if !yield(chunk.String()) {
						return false
					}
					chunk.Reset()
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			*errp = fmt.Errorf("input %s: %w", path, err)
			return false
		}
	}
	if chunk.Len() > 0 {
		return yield(chunk.String())
	}
	return true
}

// TrainTokenizer learns a byte-level BPE from the texts of inputs (as Read
// reads them) and writes it to out as tokenizer.json.
func TrainTokenizer(ctx context.Context, inputs []string, opts tokenizer.TrainOptions, out string) (*tokenizer.Tokenizer, error) {
	// out is never an input, a link or a non-regular file (fileguard).
	if err := (fileguard.File{Path: out, What: "tokenizer", Inputs: inputs, Overwrite: true}).Check(); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	var readErr error
	tok, err := tokenizer.Train(ctx, Read(inputs, &readErr), opts)
	if readErr != nil {
		return nil, readErr
	}
	if err != nil {
		return nil, err
	}
	if err := tok.Save(out); err != nil {
		return nil, err
	}
	return tok, nil
}
