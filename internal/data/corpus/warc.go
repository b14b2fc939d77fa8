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
func (r *reader) readWARC(in Input) error {
	f, err := os.Open(in.Path)
	if err != nil {
		return fmt.Errorf("input %s: %w", in.Path, err)
	}
	defer f.Close()
	cr := newCounting(f, r.opts.OnBytes)
	rel := relName(in, in.Path)
	limit := int64(2*r.opts.MaxDocBytes + 1<<20)
	if !strings.HasSuffix(in.Path, ".gz") {
		br := bufio.NewReaderSize(cr, 1<<20)
		for {
			skipNewlines(br) // the CRLF CRLF that ends the previous record
			off := cr.n - int64(br.Buffered())
			rec, err := parseWARCRecord(br, limit)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return r.problem(Problem{File: in.Path, Pos: off, Unit: "offset", Kind: "bad_record", Detail: err.Error(), Fatal: true})
			}
			rec.offset = off
			if err := r.handleWARC(in, rel, rec); err != nil {
				return err
			}
		}
	}
	zr, err := gzip.NewReader(cr)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return r.problem(Problem{File: in.Path, Pos: 0, Unit: "offset", Kind: "truncated", Detail: "gzip header: " + err.Error(), Fatal: true})
	}
	defer zr.Close()
	start := int64(0)
	for {
		zr.Multistream(false)
		data, err := io.ReadAll(io.LimitReader(zr, limit+1))
		if err != nil {
			return r.problem(Problem{File: in.Path, Pos: start, Unit: "offset", Kind: "truncated", Detail: "gzip member: " + err.Error(), Fatal: true})
		}
		if int64(len(data)) > limit {
			if _, err := io.Copy(io.Discard, zr); err != nil {
				return r.problem(Problem{File: in.Path, Pos: start, Unit: "offset", Kind: "truncated", Detail: "gzip member: " + err.Error(), Fatal: true})
			}
			if err := r.problem(Problem{File: in.Path, Pos: start, Unit: "offset", Kind: "too_large", Detail: fmt.Sprintf("gzip member larger than %d bytes", limit)}); err != nil {
				return err
			}
		} else {
			br := bufio.NewReader(bytes.NewReader(data))
			for i := 0; ; i++ {
				rec, err := parseWARCRecord(br, limit)
				if err == io.EOF {
					break
				}
				if err != nil {
					if e := r.problem(Problem{File: in.Path, Pos: start, Unit: "offset", Kind: "bad_record", Detail: err.Error()}); e != nil {
						return e
					}
					break
				}
				rec.offset, rec.index = start, i
				if err := r.handleWARC(in, rel, rec); err != nil {
					return err
				}
			}
		}
		start = cr.n
		if err := zr.Reset(cr); err != nil {
			if err == io.EOF {
				return nil
			}
			return r.problem(Problem{File: in.Path, Pos: start, Unit: "offset", Kind: "truncated", Detail: "gzip header: " + err.Error(), Fatal: true})
		}
	}
}

// parseWARCRecord reads one record: version line, headers, blank line,
// Content-Length bytes of block, then the trailing CRLFs.
func parseWARCRecord(br *bufio.Reader, limit int64) (*warcRecord, error) {
	var line string
	for {
		l, err := br.ReadString('\n')
		if err == io.EOF && strings.TrimSpace(l) == "" {
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if strings.TrimSpace(l) != "" {
			line = strings.TrimSpace(l)
			break
		}
		if err == io.EOF {
			return nil, io.EOF
		}
	}
	if !strings.HasPrefix(line, "WARC/") {
		return nil, fmt.Errorf("expected WARC version line, got %.40q", line)
	}
	h := map[string]string{}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("record header: %w", unexpected(err))
		}
		l = strings.TrimRight(l, "\r\n")
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
		body, ctype, err := httpBody(rec.block)
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

// httpBody parses an HTTP response block and returns the decoded body and
// its Content-Type (sniffed when absent).
func httpBody(block []byte) ([]byte, string, error) {
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
	b, err := io.ReadAll(body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, "", fmt.Errorf("body: %w", err)
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
