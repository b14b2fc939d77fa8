package corpus

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// readText reads plain text: the whole file as one document, or pieces split
// on blank lines, on a separator line, or before heading lines matching a
// regexp; GroupBytes merges consecutive pieces into larger documents. Pos is
// the 1-based line where a document starts. Trailing spaces and tabs of each
// line are removed (so space-only lines become blank lines).
func (r *reader) readText(in Input) error {
	src, cr, closeFn, err := r.openDecompressed(in.Path)
	if err != nil || src == nil {
		return err
	}
	defer closeFn()
	rel := relName(in, in.Path)
	var heading *regexp.Regexp
	if r.opts.Split == "heading" {
		heading, err = regexp.Compile(r.opts.Separator)
		if err != nil {
			return fmt.Errorf("separator regexp %q: %w", r.opts.Separator, err)
		}
	}
	br := bufio.NewReaderSize(src, 1<<20)
	limit := r.opts.MaxDocBytes + 1
	var (
		cur      strings.Builder
		curStart int64 = 1
		piece    int   // pieces in cur
		over     bool  // cur grew beyond MaxDocBytes
		buf      []byte
	)
	flush := func(force bool) error {
		if piece == 0 {
			return nil
		}
		if !force && r.opts.GroupBytes > 0 && cur.Len() < r.opts.GroupBytes {
			return nil
		}
		text := cur.String()
		cur.Reset()
		piece = 0
		if over {
			over = false
			return r.problem(Problem{File: in.Path, Pos: curStart, Unit: "line", Kind: "too_large", Detail: fmt.Sprintf("document longer than max_doc_bytes %d", r.opts.MaxDocBytes)})
		}
		if strings.TrimSpace(text) == "" {
			return nil // runs of blank lines are separators, not empty documents
		}
		d := document.Doc{ID: docID(r.opts.Source, rel, curStart), Source: r.opts.Source, Text: text, Meta: map[string]any{}, File: in.Path, Pos: curStart}
		return r.emit(d, "line")
	}
	pieceOpen := false // a piece is being accumulated
	for lineNo := int64(1); ; lineNo++ {
		line, tooLong, err := readLine(br, buf, limit)
		buf = line[:0]
		if err == io.EOF {
			break
		}
		if err != nil {
			if compression(in.Path) != "" && cr.ioErr == nil {
				if e := flush(true); e != nil {
					return e
				}
				return r.decodeFailure(cr, in.Path, lineNo, "line", compression(in.Path), err)
			}
			return fmt.Errorf("%s:%d: %w", in.Path, lineNo, err)
		}
		boundary := false
		skipLine := false
		split := r.opts.Split
		if tooLong {
			split = "" // an over-long line is content, never a boundary
		}
		switch split {
		case "blank_lines":
			if len(strings.TrimSpace(string(line))) == 0 {
				boundary, skipLine = true, true
			}
		case "separator":
			if strings.TrimSpace(string(line)) == r.opts.Separator {
				boundary, skipLine = true, true
			}
		case "heading":
			if heading.Match(line) {
				boundary = true
			}
		}
		if boundary && pieceOpen {
			pieceOpen = false
			if err := flush(false); err != nil {
				return err
			}
		}
		if skipLine {
			continue
		}
		if !pieceOpen {
			pieceOpen = true
			if piece == 0 {
				curStart = lineNo
			} else if r.opts.Split != "heading" {
				cur.WriteString("\n") // keep a blank line between merged pieces
			}
			piece++
		}
		if tooLong || cur.Len()+len(line) > r.opts.MaxDocBytes {
			over = true
			continue
		}
		if over {
			continue
		}
		cur.Write(bytes.TrimRight(line, " \t"))
		cur.WriteByte('\n')
	}
	return flush(true)
}
