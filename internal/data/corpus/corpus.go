// Package corpus reads raw documents for the data pipeline: JSONL (plain,
// gzip, zstd), plain text, WARC/WET, Parquet and source-code trees, one
// reader per format, all streaming. Malformed input is never silent: each
// problem is reported (file, line or byte offset, kind) and the document is
// skipped or repaired, or, in strict mode, the read stops with an error.
package corpus

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// Problem is one malformed-input event.
type Problem struct {
	File   string `json:"file"`
	Pos    int64  `json:"pos"`              // line, byte offset or row, as for document.Doc.Pos
	Unit   string `json:"unit"`             // "line", "offset", "row" or "file"
	Kind   string `json:"kind"`             // bad_json, missing_field, truncated, bad_compression, empty_file, invalid_utf8, empty, too_large, bad_record, bad_parquet …
	Detail string `json:"detail,omitempty"` // human detail
	Fatal  bool   `json:"-"`                // the rest of the file is skipped (it could not be read or decoded)
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s:%s %d: %s", p.File, p.Unit, p.Pos, p.Kind)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// ProblemError is returned (in strict mode) for malformed input.
type ProblemError struct{ Problem Problem }

func (e *ProblemError) Error() string { return "malformed input: " + e.Problem.String() }

// Options configures a read.
type Options struct {
	Source string // source tag, the first part of every id
	Format string // jsonl | text | warc | wet | parquet | code

	TextField string   // jsonl: field(s) holding the text, comma-separated fields joined by a blank line; parquet: the column (default "text")
	IDField   string   // jsonl/parquet: field kept as meta "orig_id" (default "id")
	MetaField []string // jsonl: extra top-level fields copied into Meta

	Split      string // text: "file" (default), "blank_lines", "separator", "heading"
	Separator  string // text: the separator line ("separator") or a regexp a heading line matches ("heading")
	GroupBytes int    // text: merge consecutive pieces until a document has at least this many bytes (0 = no merging)

	Include      []string // code: globs matched against the relative path and the base name (default: all files)
	Exclude      []string // code: globs excluded (same matching)
	MaxFileBytes int64    // code: skip larger files (default 1 MiB)

	MaxDocBytes int    // documents larger than this are skipped as too_large (default 8 MiB)
	UTF8        string // invalid UTF-8: "repair" (default, U+FFFD) or "skip"
	Strict      bool   // any problem ends the read with a *ProblemError
	KeepEmpty   bool   // do not report empty documents as problems (they are still skipped)
	DeferHTML   bool   // WARC responses: leave HTML in the doc for Extract (lets a worker pool do it)

	// OnProblem receives every problem (also in strict mode, before the error).
	// It is called from the reading goroutine.
	OnProblem func(Problem)
	// OnSkip is called for records that are not documents and are not
	// malformed either (WARC request/warcinfo/metadata records, non-HTML
	// responses, pages without main content, binary files in a code tree).
	OnSkip func(file, kind string)
	// OnFile is called when a file starts, with its size in bytes (progress).
	OnFile func(path string, size int64)
	// OnBytes is called with compressed/raw bytes consumed so far in the current file, coarsely.
	OnBytes func(n int64)
}

func (o *Options) defaults() {
	if o.TextField == "" {
		o.TextField = "text"
	}
	if o.IDField == "" {
		o.IDField = "id"
	}
	if o.MaxDocBytes <= 0 {
		o.MaxDocBytes = 8 << 20
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 1 << 20
	}
	if o.UTF8 == "" {
		o.UTF8 = "repair"
	}
	if o.Split == "" {
		o.Split = "file"
	}
}

// Validate checks the options for errors a user can fix in the config.
func (o Options) Validate() error {
	switch o.Format {
	case "jsonl", "text", "warc", "wet", "parquet", "code":
	default:
		return fmt.Errorf("format %q: want jsonl, text, warc, wet, parquet or code", o.Format)
	}
	switch o.Split {
	case "", "file", "blank_lines", "separator", "heading":
	default:
		return fmt.Errorf("split %q: want file, blank_lines, separator or heading", o.Split)
	}
	if (o.Split == "separator" || o.Split == "heading") && o.Separator == "" {
		return fmt.Errorf("split %q needs a separator", o.Split)
	}
	switch o.UTF8 {
	case "", "repair", "skip":
	default:
		return fmt.Errorf("utf8 %q: want repair or skip", o.UTF8)
	}
	for _, g := range append(append([]string{}, o.Include...), o.Exclude...) {
		if _, err := filepath.Match(g, "x"); err != nil {
			return fmt.Errorf("glob %q: %w", g, err)
		}
	}
	return nil
}

// Input is one file (or, for the code format, one directory) to read, with
// the root its document ids are relative to.
type Input struct {
	Path string
	Root string
}

// Resolve expands ${GOROOT} and globs in patterns (their ${KESTREL_DATA}
// already resolved, by config.Resolve or prepare's resolution) and
// returns the matching inputs in a deterministic order. A pattern that
// matches nothing is an error naming it.
func Resolve(patterns []string) ([]Input, error) {
	var out []Input
	seen := map[string]bool{}
	for _, pat := range patterns {
		p := pat
		if strings.Contains(p, "${GOROOT}") {
			root := os.Getenv("GOROOT")
			if root == "" {
				root = runtime.GOROOT()
			}
			if root == "" {
				return nil, fmt.Errorf("input %q: GOROOT unknown (set $GOROOT)", pat)
			}
			p = strings.ReplaceAll(p, "${GOROOT}", root)
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", pat, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("input %q: no file matches %s", pat, p)
		}
		sort.Strings(matches)
		root := globRoot(p)
		for _, m := range matches {
			if seen[m] {
				continue
			}
			seen[m] = true
			r := root
			if st, err := os.Stat(m); err == nil && st.IsDir() && m == p {
				r = m
			}
			out = append(out, Input{Path: m, Root: r})
		}
	}
	return out, nil
}

// globRoot is the directory part of p before its first glob metacharacter.
func globRoot(p string) string {
	i := strings.IndexAny(p, "*?[")
	if i < 0 {
		return filepath.Dir(p)
	}
	return filepath.Dir(p[:i+1])
}

func relName(in Input, path string) string {
	if in.Root != "" {
		if r, err := filepath.Rel(in.Root, path); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
	}
	return filepath.Base(path)
}

// Read streams the documents of inputs. Each yielded error ends the
// sequence: I/O errors always, malformed input only in strict mode.
func Read(ctx context.Context, inputs []Input, opts Options) iter.Seq2[document.Doc, error] {
	opts.defaults()
	return func(yield func(document.Doc, error) bool) {
		if err := opts.Validate(); err != nil {
			yield(document.Doc{}, err)
			return
		}
		r := &reader{ctx: ctx, opts: opts, yield: yield}
		for _, in := range inputs {
			if err := ctx.Err(); err != nil {
				yield(document.Doc{}, err)
				return
			}
			if err := r.readInput(in); err != nil {
				if !errors.Is(err, errStop) {
					yield(document.Doc{}, err)
				}
				return
			}
		}
	}
}

// errStop means the consumer stopped the iteration.
var errStop = errors.New("stop")

type reader struct {
	ctx   context.Context
	opts  Options
	yield func(document.Doc, error) bool
	n     int64 // documents yielded (for ctx polling)
}

func (r *reader) readInput(in Input) error {
	st, err := os.Stat(in.Path)
	if err != nil {
		return fmt.Errorf("input %s: %w", in.Path, err)
	}
	if r.opts.OnFile != nil {
		size := st.Size()
		if st.IsDir() {
			size = 0
		}
		r.opts.OnFile(in.Path, size)
	}
	if st.IsDir() && r.opts.Format != "code" {
		return fmt.Errorf("input %s: is a directory (only format \"code\" reads directories)", in.Path)
	}
	switch r.opts.Format {
	case "jsonl":
		return r.readJSONL(in)
	case "text":
		return r.readText(in)
	case "warc", "wet":
		return r.readWARC(in)
	case "parquet":
		return r.readParquet(in)
	case "code":
		return r.readCode(in)
	}
	return fmt.Errorf("format %q unknown", r.opts.Format)
}

// problem reports p; in strict mode it returns the error that ends the read.
func (r *reader) problem(p Problem) error {
	if r.opts.OnProblem != nil {
		r.opts.OnProblem(p)
	}
	if r.opts.Strict {
		return &ProblemError{Problem: p}
	}
	return nil
}

// emit checks a document's text (empty, size, UTF-8) and yields it.
func (r *reader) emit(d document.Doc, unit string) error {
	text := d.Text
	size := len(text)
	if d.HTML != nil {
		size = len(d.HTML)
	}
	if size > r.opts.MaxDocBytes {
		return r.problem(Problem{File: d.File, Pos: d.Pos, Unit: unit, Kind: "too_large", Detail: fmt.Sprintf("%d bytes > max_doc_bytes %d", size, r.opts.MaxDocBytes)})
	}
	if d.HTML == nil {
		if strings.TrimSpace(text) == "" {
			if r.opts.KeepEmpty {
				return nil
			}
			return r.problem(Problem{File: d.File, Pos: d.Pos, Unit: unit, Kind: "empty"})
		}
		if !utf8.ValidString(text) {
			off := invalidUTF8Offset(text)
			if r.opts.UTF8 == "skip" {
				return r.problem(Problem{File: d.File, Pos: d.Pos, Unit: unit, Kind: "invalid_utf8", Detail: fmt.Sprintf("first bad byte at text offset %d; skipped", off)})
			}
			if err := r.problem(Problem{File: d.File, Pos: d.Pos, Unit: unit, Kind: "invalid_utf8", Detail: fmt.Sprintf("first bad byte at text offset %d; repaired", off)}); err != nil {
				return err
			}
			d.Text = strings.ToValidUTF8(text, "\uFFFD")
		}
	}
	r.n++
	if r.n%256 == 0 {
		if err := r.ctx.Err(); err != nil {
			return err
		}
	}
	if !r.yield(d, nil) {
		return errStop
	}
	return nil
}

func (r *reader) skip(file, kind string) {
	if r.opts.OnSkip != nil {
		r.opts.OnSkip(file, kind)
	}
}

func invalidUTF8Offset(s string) int {
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

func docID(source, rel string, pos int64) string {
	return fmt.Sprintf("%s:%s:%d", source, rel, pos)
}
