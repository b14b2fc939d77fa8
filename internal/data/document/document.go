// Package document holds the data pipeline's one document type: what the
// corpus readers yield, what the filters, dedup and decontamination stages
// pass along, what prepare writes as a line of docs/<source>-NNNNN.jsonl.zst
// and what the shard builder tokenizes. It imports nothing of the project,
// so every stage (and the loader's tests) can name it without pulling in the
// readers' HTML and Parquet dependencies.
package document

// Doc is one document. Its JSON form is a kept-document line:
// {"id": …, "source": …, "text": …, "meta": {…}}; where it was read from
// (File, Pos) and raw HTML awaiting extraction stay out of it.
type Doc struct {
	// ID is stable across runs: source, file (relative to its input root)
	// and line or record number, e.g. "math:train.jsonl:17". The shard
	// builder's validation split is a hash of it.
	ID string `json:"id"`
	// Source is the source tag (web, code, math, books …).
	Source string `json:"source"`
	Text   string `json:"text"`
	// Meta holds small per-document facts (url, original id, offsets).
	Meta map[string]any `json:"meta,omitempty"`
	// File and Pos locate the document in its input: Pos is a 1-based line
	// number for line formats, a byte offset for WARC records, a row for
	// Parquet.
	File string `json:"-"`
	Pos  int64  `json:"-"`
	// HTML is raw HTML awaiting main-content extraction (a WARC response
	// read with corpus.Options.DeferHTML); corpus.Extract turns it into
	// Text and clears it. Nil for every other document.
	HTML []byte `json:"-"`
}

// NeedsExtract reports whether d holds raw HTML that corpus.Extract must
// turn into text before d.Text is meaningful.
func (d *Doc) NeedsExtract() bool { return d.HTML != nil }

// RawLen is the size of the document as read: its HTML for a pending WARC
// response, its text otherwise.
func (d *Doc) RawLen() int {
	if d.HTML != nil {
		return len(d.HTML)
	}
	return len(d.Text)
}
