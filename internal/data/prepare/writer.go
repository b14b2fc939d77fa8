package prepare

import (
	"bufio"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sort"

	"github.com/klauspost/compress/zstd"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// RejectRecord is one line of rejects/<stage>.jsonl.zst.
type RejectRecord struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	Stage  string `json:"stage"`
	Rule   string `json:"rule"`
	Detail string `json:"detail,omitempty"`
}

// zstdJSONL writes JSON lines into a zstd stream.
type zstdJSONL struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	zw   *zstd.Encoder
	enc  *json.Encoder
	n    int64 // uncompressed bytes
	docs int64
}

func createZstdJSONL(path string) (*zstdJSONL, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	zw, err := zstd.NewWriter(bw, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w := &zstdJSONL{path: path, f: f, bw: bw, zw: zw}
	w.enc = json.NewEncoder(countWriter{w})
	w.enc.SetEscapeHTML(false)
	return w, nil
}

type countWriter struct{ w *zstdJSONL }

func (c countWriter) Write(p []byte) (int, error) {
	c.w.n += int64(len(p))
	return c.w.zw.Write(p)
}

func (w *zstdJSONL) write(v any) error {
	w.docs++
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

// close flushes and fsyncs the file.
func (w *zstdJSONL) close() error {
	if w == nil || w.f == nil {
		return nil
	}
	err := w.zw.Close()
	if e := w.bw.Flush(); err == nil {
		err = e
	}
	f := w.f
	w.f = nil
	return finishFile(f, w.path, err)
}

// finishFile fsyncs and closes f once its writer has flushed (flushErr is
// the flush's error) and returns the first error, naming path.
func finishFile(f *os.File, path string, flushErr error) error {
	err := flushErr
	if e := f.Sync(); err == nil {
		err = e
	}
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// shardSet writes kept documents as docs/<source>-NNNNN.jsonl.zst, rotating
// at a size limit.
type shardSet struct {
	dir    string
	tag    string // put after the source in file names (distributed runs: "-uNNNNNN")
	limit  int64
	cur    map[string]*zstdJSONL
	count  map[string]int
	closed []datareport.ShardFile
}

func newShardSet(dir string, limit int64) *shardSet {
	return &shardSet{dir: dir, limit: limit, cur: map[string]*zstdJSONL{}, count: map[string]int{}}
}

func (s *shardSet) write(rec document.Doc) error {
	w := s.cur[rec.Source]
	if w != nil && w.n >= s.limit {
		if err := s.finish(rec.Source); err != nil {
			return err
		}
		w = nil
	}
	if w == nil {
		name := fmt.Sprintf("%s%s-%05d.jsonl.zst", rec.Source, s.tag, s.count[rec.Source])
		s.count[rec.Source]++
		var err error
		if w, err = createZstdJSONL(filepath.Join(s.dir, name)); err != nil {
			return err
		}
		s.cur[rec.Source] = w
	}
	return w.write(rec)
}

func (s *shardSet) finish(source string) error {
	w := s.cur[source]
	if w == nil {
		return nil
	}
	delete(s.cur, source)
	if err := w.close(); err != nil {
		return err
	}
	s.closed = append(s.closed, datareport.ShardFile{Path: filepath.Join(filepath.Base(s.dir), filepath.Base(w.path)), Source: source, Docs: w.docs, Bytes: w.n})
	return nil
}

func (s *shardSet) close() ([]datareport.ShardFile, error) {
	names := make([]string, 0, len(s.cur))
	for k := range s.cur {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := s.finish(k); err != nil {
			return nil, err
		}
	}
	sort.Slice(s.closed, func(i, j int) bool { return s.closed[i].Path < s.closed[j].Path })
	return s.closed, nil
}

// abort closes every open file without caring about errors.
func (s *shardSet) abort() {
	for _, w := range s.cur {
		w.close()
	}
}

// ReadDocs streams the kept documents of shard files (docs/<source>-NNNNN.jsonl.zst) in order.
func ReadDocs(paths []string) iter.Seq2[document.Doc, error] {
	return func(yield func(document.Doc, error) bool) {
		for _, p := range paths {
			f, err := os.Open(p)
			if err != nil {
				yield(document.Doc{}, err)
				return
			}
			zr, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderConcurrency(1))
			if err != nil {
				f.Close()
				yield(document.Doc{}, fmt.Errorf("%s: %w", p, err))
				return
			}
			dec := json.NewDecoder(zr)
			ok := func() bool {
				defer f.Close()
				defer zr.Close()
				for line := 1; dec.More(); line++ {
					var rec document.Doc
					if err := dec.Decode(&rec); err != nil {
						return yield(document.Doc{}, fmt.Errorf("%s: record %d: %w", p, line, err)) && false
					}
					if !yield(rec, nil) {
						return false
					}
				}
				return true
			}()
			if !ok {
				return
			}
		}
	}
}
