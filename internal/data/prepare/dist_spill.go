package prepare

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"unicode/utf8"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// A unit's clean survivors wait in the work directory between phase 1 and
// pass 2 as u<N>.docs.bin: spillMagic, then per document its id, source,
// text and meta (JSON, empty when there is none), each as a uvarint
// length and the bytes. It is neither JSON nor compressed: one process's
// spill (zstd JSON lines) cost the ranks about 0.6 s of CPU per 100 MB
// of survivors to write and read again, a tenth of phase 1. The strings
// are stored as a JSON round trip leaves them (invalid UTF-8 bytes become
// U+FFFD, one per byte), so pass 2 sees exactly the documents one
// process reads back from its spill.
const spillMagic = "KESTREL-SPILL-1\n"

// spillWriter writes a unit's survivors.
type spillWriter struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	buf  []byte
}

func createSpill(path string) (*spillWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &spillWriter{path: path, f: f, bw: bufio.NewWriterSize(f, 1<<20)}
	if _, err := w.bw.WriteString(spillMagic); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return w, nil
}

func (w *spillWriter) write(d document.Doc) error {
	var meta []byte
	if len(d.Meta) > 0 {
		var err error
		if meta, err = json.Marshal(d.Meta); err != nil {
			return fmt.Errorf("write %s: meta of %s: %w", w.path, d.ID, err)
		}
	}
	b := w.buf[:0]
	for _, s := range []string{jsonString(d.ID), jsonString(d.Source), jsonString(d.Text)} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(meta)))
	b = append(b, meta...)
	w.buf = b[:0]
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

// close flushes and fsyncs the file.
func (w *spillWriter) close() error {
	if w == nil || w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	return finishFile(f, w.path, w.bw.Flush())
}

// jsonString is s as a JSON encoding and decoding leaves it: every byte
// that is not part of valid UTF-8 becomes U+FFFD (encoding/json's rule).
func jsonString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// readSpill streams the documents of a unit's spill in order.
func readSpill(path string) iter.Seq2[document.Doc, error] {
	return func(yield func(document.Doc, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(document.Doc{}, err)
			return
		}
		defer f.Close()
		r := bufio.NewReaderSize(f, 1<<20)
		magic := make([]byte, len(spillMagic))
		if _, err := io.ReadFull(r, magic); err != nil || string(magic) != spillMagic {
			yield(document.Doc{}, fmt.Errorf("%s: not a spill file (%q)", path, magic))
			return
		}
		field := func(what string, rec int) ([]byte, error) {
			n, err := binary.ReadUvarint(r)
			if err == nil && n > 1<<40 {
				err = fmt.Errorf("length %d", n)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: record %d: %s: %w", path, rec, what, err)
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, fmt.Errorf("%s: record %d: %s: %w", path, rec, what, err)
			}
			return b, nil
		}
		for rec := 1; ; rec++ {
			if _, err := r.Peek(1); errors.Is(err, io.EOF) {
				return
			}
			var d document.Doc
			var b [4][]byte
			for i, what := range []string{"id", "source", "text", "meta"} {
				if b[i], err = field(what, rec); err != nil {
					yield(document.Doc{}, err)
					return
				}
			}
			d.ID, d.Source, d.Text = string(b[0]), string(b[1]), string(b[2])
			if len(b[3]) > 0 {
				if err := json.Unmarshal(b[3], &d.Meta); err != nil {
					yield(document.Doc{}, fmt.Errorf("%s: record %d: meta: %w", path, rec, err))
					return
				}
			}
			if !yield(d, nil) {
				return
			}
		}
	}
}
