package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// shippedText is every text of ../shared/data: text files line by line
// (newline kept), every string of every JSONL record, and gzipped JSON
// lines / WET records line by line. Loaded once per test binary.
var shippedOnce sync.Once
var shippedTexts []string
var shippedErr error

func shipped(t testing.TB) []string {
	t.Helper()
	shippedOnce.Do(func() {
		root, err := datadir.Root()
		if err != nil {
			shippedErr = err
			return
		}
		var files []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		sort.Strings(files)
		for _, p := range files {
			base := filepath.Base(p)
			var r io.Reader
			f, err := os.Open(p)
			if err != nil {
				shippedErr = err
				return
			}
			switch {
			case strings.HasSuffix(base, ".json.gz"), strings.HasSuffix(base, ".wet.gz"):
				zr, err := gzip.NewReader(f)
				if err != nil {
					shippedErr = err
					return
				}
				r = zr
			case strings.HasSuffix(base, ".gz"), strings.HasSuffix(base, ".tiktoken"), base == "vocab.json", base == "merges.txt", strings.HasSuffix(base, "tokenizer.json"):
				f.Close()
				continue
			default:
				r = f
			}
			data, err := io.ReadAll(r)
			f.Close()
			if err != nil {
				shippedErr = err
				return
			}
			isJSONL := strings.HasSuffix(base, ".jsonl") || strings.HasSuffix(base, ".json.gz")
			sc := bufio.NewScanner(strings.NewReader(string(data)))
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			sc.Split(scanLinesKeep)
			for sc.Scan() {
				line := sc.Text()
				if !isJSONL {
					shippedTexts = append(shippedTexts, line)
					continue
				}
				var v any
				if json.Unmarshal([]byte(line), &v) != nil {
					shippedTexts = append(shippedTexts, line)
					continue
				}
				walkStrings(v, func(s string) { shippedTexts = append(shippedTexts, s) })
			}
		}
		if len(shippedTexts) < 10000 {
			shippedErr = io.ErrUnexpectedEOF
		}
	})
	if shippedErr != nil {
		t.Fatalf("shipped data: %v", shippedErr)
	}
	return shippedTexts
}

func walkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case []any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkStrings(x[k], fn)
		}
	}
}

// scanLinesKeep is bufio.ScanLines keeping the line terminator.
func scanLinesKeep(data []byte, atEOF bool) (int, []byte, error) {
	for i, c := range data {
		if c == '\n' {
			return i + 1, data[:i+1], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
