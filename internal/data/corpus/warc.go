package corpus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	trafilatura "github.com/markusmobius/go-trafilatura"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// warcRecord is one parsed WARC record.
type warcRecord struct {
	header map[string]string // canonical lower-case names
	block  []byte
	offset int64 // byte offset of the record (compressed offset of its gzip member for .gz)
	index  int   // record number inside its gzip member (0 for the usual one record per member)
}

// readWARC reads WARC or WET files, plain or gzip-compressed with one member
// per record (the WARC convention; several records per member also work).
// Response records with HTML become documents after main-content extraction;
// conversion records (WET) are documents as they are; the rest is skipped.
// Data that is not a record (garbage between records, a record whose header
// or length is wrong, bytes between gzip members that are no member, a
// corrupt member) is skipped up to the next record, or member, and reported
// once with its offset and the bytes skipped; the records after it are read.
func (r *reader) readWARC(in Input) error {
	f, err := os.Open(in.Path)
	if err != nil {
		return fmt.Errorf("input %s: %w", in.Path, err)
	}
	defer f.Close()
	rel := relName(in, in.Path)
	limit := int64(2*r.opts.MaxDocBytes + 1<<20)
	emit := func(rec *warcRecord) error { return r.handleWARC(in, rel, rec) }
	if compression(in.Path) != "gzip" {
		cr := newCounting(f, r.opts.OnBytes)
		br := bufio.NewReaderSize(cr, 1<<20)
		s := &warcScanner{file: in.Path, br: br, limit: limit, member: -1,
			pos:   func() int64 { return cr.n - int64(br.Buffered()) },
			ioErr: func() error { return cr.ioErr },
			seek: func(off int64) error {
				if err := cr.seek(f, off); err != nil {
					return err
				}
				br.Reset(cr)
				return nil
			}}
		return r.scanWARC(s, emit)
	}
	return r.readGzipWARC(in, f, limit, emit, 0, -1)
}

// readGzipWARC reads a .warc.gz member by member: the members starting in
// [from, to) (to < 0: to the end; ReadParts reads byte ranges this way).
func (r *reader) readGzipWARC(in Input, f *os.File, limit int64, emit func(*warcRecord) error, from, to int64) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("input %s: %w", in.Path, err)
	}
	if st.Size() == 0 {
		return r.emptyCompressed(in.Path, "gzip")
	}
	cr := newCounting(f, r.opts.OnBytes)
	if from > 0 {
		if err := cr.seek(f, from); err != nil {
			return fmt.Errorf("input %s: %w", in.Path, err)
		}
	}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return r.decodeFailure(cr, in.Path, from, "offset", "gzip header", err)
	}
	defer zr.Close()
	start := from
	for {
		if to >= 0 && start >= to {
			return nil
		}
		zr.Multistream(false)
		data, err := io.ReadAll(io.LimitReader(zr, limit+1))
		if err == nil && int64(len(data)) > limit {
			if _, err = io.Copy(io.Discard, zr); err == nil {
				if err := r.problem(Problem{File: in.Path, Pos: start, Unit: "offset", Kind: "too_large", Detail: fmt.Sprintf("gzip member larger than %d bytes", limit)}); err != nil {
					return err
				}
			}
			data = nil
		}
		if err != nil {
			if cr.ioErr != nil || errors.Is(err, io.ErrUnexpectedEOF) {
				return r.decodeFailure(cr, in.Path, start, "offset", "gzip member", err)
			}
			// A corrupt member: go on at the next one.
			at, err := r.nextGzipMember(f, cr, zr, start, "bad_compression", "gzip member: "+err.Error())
			if at < 0 || err != nil {
				return err
			}
			start = at
			continue
		}
		if data != nil {
			rd := bytes.NewReader(data)
			br := bufio.NewReader(rd)
			i := 0
			s := &warcScanner{file: in.Path, br: br, limit: limit, member: start,
				pos:   func() int64 { return int64(len(data)) - int64(rd.Len()) - int64(br.Buffered()) },
				ioErr: func() error { return nil },
				seek: func(off int64) error {
					if _, err := rd.Seek(off, io.SeekStart); err != nil {
						return err
					}
					br.Reset(rd)
					return nil
				}}
			err := r.scanWARC(s, func(rec *warcRecord) error {
				rec.offset, rec.index = start, i
				i++
				return emit(rec)
			})
			if err != nil {
				return err
			}
		}
		start = cr.n
		if to >= 0 && start >= to {
			return nil
		}
		if err := zr.Reset(cr); err != nil {
			if err == io.EOF {
				return nil
			}
			if cr.ioErr != nil || errors.Is(err, io.ErrUnexpectedEOF) {
				return r.decodeFailure(cr, in.Path, start, "offset", "gzip header", err)
			}
			// Bytes that are no gzip member: go on at the next member.
			at, err := r.nextGzipMember(f, cr, zr, start, "bad_record", "not a gzip member: "+err.Error())
			if at < 0 || err != nil {
				return err
			}
			start = at
		}
	}
}

// nextGzipMember looks for the first gzip member after the unreadable one
// at offset bad, leaves zr at its start (cr positioned after its header)
// and reports the skipped bytes as one problem of the given kind. It
// returns the member's offset, or -1 when no member follows (the rest of
// the file is skipped and reported) or strict mode ends the read (err).
func (r *reader) nextGzipMember(f *os.File, cr *countingReader, zr *gzip.Reader, bad int64, kind, why string) (at int64, err error) {
	for from := bad + 1; ; {
		at, err = findGzipMagic(f, from)
		if err != nil {
			return -1, fmt.Errorf("input %s: %w", f.Name(), err)
		}
		if at < 0 {
			end, _ := f.Seek(0, io.SeekEnd)
			return -1, r.problem(Problem{File: f.Name(), Pos: bad, Unit: "offset", Kind: kind, Fatal: true,
				Detail: fmt.Sprintf("%s; skipped %d bytes to the end of the file", why, end-bad)})
		}
		if err := cr.seek(f, at); err != nil {
			return -1, fmt.Errorf("input %s: %w", f.Name(), err)
		}
		if zr.Reset(cr) == nil {
			if err := r.problem(Problem{File: f.Name(), Pos: bad, Unit: "offset", Kind: kind,
				Detail: fmt.Sprintf("%s; skipped %d bytes to the next gzip member at offset %d", why, at-bad, at)}); err != nil {
				return -1, err
			}
			return at, nil
		}
		if cr.ioErr != nil {
			return -1, fmt.Errorf("input %s: %w", f.Name(), cr.ioErr)
		}
		from = at + 1
	}
}

// findGzipMagic returns the offset of the first gzip member signature
// (1f 8b 08) at or after from, or -1.
func findGzipMagic(f *os.File, from int64) (int64, error) {
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for off := from; ; off++ {
		b, err := br.ReadByte()
		if err == io.EOF {
			return -1, nil
		}
		if err != nil {
			return 0, err
		}
		if b != 0x1f {
			continue
		}
		if p, err := br.Peek(2); err == nil && p[0] == 0x8b && p[1] == 8 {
			return off, nil
		}
	}
}

// warcLineMax bounds one line of a WARC record header (and of garbage
// being skipped), so that a file without newlines cannot exhaust memory.
const warcLineMax = 1 << 20

// warcScanner is a stream of WARC records: a plain file or the data of
// one gzip member.
type warcScanner struct {
	file   string
	br     *bufio.Reader
	pos    func() int64          // offset of the next unread byte
	seek   func(off int64) error // continue reading at off
	ioErr  func() error          // a failure reading the file itself, nil when none
	limit  int64                 // largest record block
	member int64                 // offset of the gzip member, -1 for a plain file
}

// scanWARC reads every record of s and passes it to emit with its offset
// set (for a plain file). Data that is not a record is skipped up to the
// next WARC version line and reported as one bad_record problem naming the
// offset where it began and how many bytes were skipped.
func (r *reader) scanWARC(s *warcScanner, emit func(*warcRecord) error) error {
	bad, why := int64(-1), ""
	report := func(end int64, atEOF bool) error {
		if bad < 0 {
			return nil
		}
		p := Problem{File: s.file, Pos: bad, Unit: "offset", Kind: "bad_record", Fatal: atEOF && s.member < 0}
		to := fmt.Sprintf("the next record at offset %d", end)
		if atEOF {
			to = "the end"
		}
		p.Detail = fmt.Sprintf("%s; skipped %d bytes to %s", why, end-bad, to)
		if s.member >= 0 {
			p.Pos = s.member
			p.Detail = fmt.Sprintf("gzip member data at byte %d: %s", bad, p.Detail)
		}
		bad = -1
		return r.problem(p)
	}
	var buf []byte
	for {
		skipNewlines(s.br) // the CRLF CRLF that ends the previous record
		off := s.pos()
		line, tooLong, err := readLine(s.br, buf, warcLineMax)
		buf = line[:0]
		if err == io.EOF {
			return report(off, true)
		}
		if err != nil {
			return fmt.Errorf("input %s: offset %d: %w", s.file, off, err)
		}
		if tooLong || !warcVersionLine(line) {
			if bad < 0 {
				bad, why = off, fmt.Sprintf("expected a WARC version line, got %.40q", line)
				if tooLong {
					why = fmt.Sprintf("expected a WARC version line, got a line longer than %d bytes", warcLineMax)
				}
			}
			continue
		}
		after := s.pos()
		rec, err := parseWARCRest(s.br, s.limit)
		if err != nil {
			if e := s.ioErr(); e != nil {
				return fmt.Errorf("input %s: %w", s.file, e)
			}
			if bad < 0 {
				bad, why = off, err.Error()
			}
			// The header or the Content-Length may be what is wrong: look
			// for the next record right after this version line.
			if err := s.seek(after); err != nil {
				return fmt.Errorf("input %s: %w", s.file, err)
			}
			continue
		}
		if err := report(off, false); err != nil {
			return err
		}
		rec.offset = off
		if err := emit(rec); err != nil {
			return err
		}
	}
}

// warcVersionLine reports whether line is a WARC version line ("WARC/1.0").
func warcVersionLine(line []byte) bool {
	v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("WARC/"))
	if !ok {
		return false
	}
	major, minor, ok := bytes.Cut(v, []byte("."))
	return ok && len(major) > 0 && len(minor) > 0 && allDigits(major) && allDigits(minor)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseWARCRest reads a record after its version line: headers, blank
// line, Content-Length bytes of block.
func parseWARCRest(br *bufio.Reader, limit int64) (*warcRecord, error) {
	h := map[string]string{}
	var buf []byte
	for {
		b, tooLong, err := readLine(br, buf, warcLineMax)
		buf = b[:0]
		if err != nil {
			return nil, fmt.Errorf("record header: %w", unexpected(err))
		}
		if tooLong {
			return nil, fmt.Errorf("record header line longer than %d bytes", warcLineMax)
		}
		l := string(b)
		if l == "" {
			break
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("bad header line %.60q", l)
		}
		h[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	n, err := strconv.ParseInt(h["content-length"], 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("bad Content-Length %q", h["content-length"])
	}
	if n > limit {
		return nil, fmt.Errorf("Content-Length %d larger than %d", n, limit)
	}
	block := make([]byte, n)
	if _, err := io.ReadFull(br, block); err != nil {
		return nil, fmt.Errorf("record block (%d bytes): %w", n, unexpected(err))
	}
	return &warcRecord{header: h, block: block}, nil
}

func skipNewlines(br *bufio.Reader) {
	for {
		b, err := br.Peek(1)
		if err != nil || (b[0] != '\r' && b[0] != '\n') {
			return
		}
		br.Discard(1)
	}
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *reader) handleWARC(in Input, rel string, rec *warcRecord) error {
	typ := rec.header["warc-type"]
	uri := strings.Trim(rec.header["warc-target-uri"], "<>")
	meta := map[string]any{"url": uri}
	if id := rec.header["warc-record-id"]; id != "" {
		meta["warc_record_id"] = strings.Trim(id, "<>")
	}
	if lang := rec.header["warc-identified-content-language"]; lang != "" {
		meta["language"] = lang
	}
	id := docID(r.opts.Source, rel, rec.offset)
	if rec.index > 0 {
		id += "." + strconv.Itoa(rec.index)
	}
	d := document.Doc{ID: id, Source: r.opts.Source, Meta: meta, File: in.Path, Pos: rec.offset}
	switch typ {
	case "conversion":
		d.Text = string(rec.block)
		return r.emit(d, "offset")
	case "response":
		body, ctype, err := httpBody(rec.block, r.opts.MaxDocBytes)
		if errors.Is(err, errBodyTooLarge) {
			return r.problem(Problem{File: in.Path, Pos: rec.offset, Unit: "offset", Kind: "too_large", Detail: fmt.Sprintf("HTTP body over max_doc_bytes %d once decoded", r.opts.MaxDocBytes)})
		}
		if err != nil {
			return r.problem(Problem{File: in.Path, Pos: rec.offset, Unit: "offset", Kind: "bad_record", Detail: "HTTP response: " + err.Error()})
		}
		if !strings.Contains(ctype, "html") {
			r.skip(in.Path, "non_html_response")
			return nil
		}
		d.HTML = body
		if r.opts.DeferHTML {
			return r.emit(d, "offset")
		}
		if err := Extract(&d); err != nil {
			r.skip(in.Path, "no_main_content")
			return nil
		}
		return r.emit(d, "offset")
	default:
		r.skip(in.Path, "warc_"+typ)
		return nil
	}
}

// errBodyTooLarge: an HTTP body decodes to more than the largest document.
var errBodyTooLarge = errors.New("HTTP body too large")

// httpBody parses an HTTP response block and returns the decoded body and
// its Content-Type (sniffed when absent). A body that decodes to more than
// max bytes is errBodyTooLarge, read no further (a small gzip body can
// inflate a thousandfold).
func httpBody(block []byte, max int) ([]byte, string, error) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(block)), nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	switch strings.ToLower(resp.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, "", fmt.Errorf("gzip body: %w", err)
		}
		body = zr
	default:
		return nil, "", fmt.Errorf("unsupported Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	b, err := io.ReadAll(io.LimitReader(body, int64(max)+1))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, "", fmt.Errorf("body: %w", err)
	}
	if len(b) > max {
		return nil, "", errBodyTooLarge
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(b)
	}
	return b, strings.ToLower(ctype), nil
}

// ErrNoContent is returned by Extract when a page has no main content.
var ErrNoContent = errors.New("no main content")

// Extract turns a document holding raw HTML (a WARC response read with
// DeferHTML) into its main-content text with go-trafilatura. Documents
// without pending HTML are left alone. Safe for concurrent use on distinct
// documents.
func Extract(d *document.Doc) (err error) {
	if d.HTML == nil {
		return nil
	}
	html := d.HTML
	d.HTML = nil
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("html extraction panicked: %v", p)
		}
	}()
	opts := trafilatura.Options{ExcludeComments: true}
	if u, ok := d.Meta["url"].(string); ok && u != "" {
		if pu, e := url.Parse(u); e == nil {
			opts.OriginalURL = pu
		}
	}
	res, e := trafilatura.Extract(bytes.NewReader(html), opts)
	if e != nil {
		return fmt.Errorf("%w: %v", ErrNoContent, e)
	}
	text := strings.TrimSpace(res.ContentText)
	if text == "" {
		return ErrNoContent
	}
	if res.Metadata.Title != "" {
		d.Meta["title"] = res.Metadata.Title
	}
	d.Text = strings.ToValidUTF8(text, "\uFFFD")
	return nil
}
