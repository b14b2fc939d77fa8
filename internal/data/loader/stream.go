package loader

import (
	"fmt"
	"sort"
)

// TokenStream is one split of one source: a flat token sequence with the
// offsets at which documents start. internal/data/shards provides it for a
// prepared dataset; MemStream provides it in memory.
type TokenStream interface {
	// Len is the number of tokens.
	Len() int64
	// ReadAt fills dst with tokens [off, off+len(dst)).
	ReadAt(dst []int32, off int64) error
	// NumDocs is the number of documents.
	NumDocs() int64
	// DocStart is the token offset at which document i starts; strictly
	// increasing in i, DocStart(0) = 0.
	DocStart(i int64) int64
}

// DocIDer is optionally implemented by a TokenStream that knows the
// upstream identifier of each document (for BatchInfo).
type DocIDer interface {
	DocID(i int64) string
}

// Source is one named source of a dataset with its train and validation
// streams (Val may be nil).
type Source struct {
	Name  string
	Train TokenStream
	Val   TokenStream
	// TrainShards (optional) are the shards of the train stream, for
	// quarantine entries that name a shard.
	TrainShards []ShardSpan
}

// Dataset is what the loader reads: named sources. Name identifies it in
// logs and reports; Hash (optional) is the dataset's content hash.
type Dataset struct {
	Name    string
	Hash    string
	Sources []Source
}

// sourceIndex returns the index of the named source, or -1.
func (d *Dataset) sourceIndex(name string) int {
	for i, s := range d.Sources {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// docAt returns the index of the document containing token offset off
// (the last document whose start ≤ off).
func docAt(s TokenStream, off int64) int64 {
	n := s.NumDocs()
	if n == 0 {
		return 0
	}
	// first document starting after off, minus one
	i := sort.Search(int(n), func(i int) bool { return s.DocStart(int64(i)) > off })
	if i == 0 {
		return 0
	}
	return int64(i - 1)
}

// docEnd is the end offset of document i.
func docEnd(s TokenStream, i int64) int64 {
	if i+1 < s.NumDocs() {
		return s.DocStart(i + 1)
	}
	return s.Len()
}

// MemStream is an in-memory TokenStream: tokens plus document starts.
type MemStream struct {
	Tokens []int32
	Starts []int64 // document starts; nil = one document
	IDs    []string
}

// NewMemStream builds a stream from documents laid end to end.
func NewMemStream(docs [][]int32) *MemStream {
	m := &MemStream{}
	for _, d := range docs {
		m.Starts = append(m.Starts, int64(len(m.Tokens)))
		m.Tokens = append(m.Tokens, d...)
	}
	return m
}

// Len implements TokenStream.
func (m *MemStream) Len() int64 { return int64(len(m.Tokens)) }

// ReadAt implements TokenStream.
func (m *MemStream) ReadAt(dst []int32, off int64) error {
	if off < 0 || off+int64(len(dst)) > int64(len(m.Tokens)) {
		return fmt.Errorf("memstream: read [%d,%d) outside [0,%d)", off, off+int64(len(dst)), len(m.Tokens))
	}
	copy(dst, m.Tokens[off:])
	return nil
}

// NumDocs implements TokenStream.
func (m *MemStream) NumDocs() int64 {
	if m.Starts == nil {
		if len(m.Tokens) == 0 {
			return 0
		}
		return 1
	}
	return int64(len(m.Starts))
}

// DocStart implements TokenStream.
func (m *MemStream) DocStart(i int64) int64 {
	if m.Starts == nil {
		return 0
	}
	return m.Starts[i]
}

// DocID implements DocIDer when IDs are set.
func (m *MemStream) DocID(i int64) string {
	if int(i) < len(m.IDs) {
		return m.IDs[i]
	}
	return fmt.Sprintf("#%d", i)
}
