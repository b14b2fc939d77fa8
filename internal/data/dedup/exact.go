package dedup

import (
	"sync"

	"github.com/zeebo/xxh3"
)

// Exact finds documents whose normalised text (NormalizeText) is identical,
// by a 64-bit xxh3 hash of it. It keeps 8 bytes plus the first id per
// distinct text. It is safe for concurrent use; with concurrent callers,
// "first" means first to reach the lock.
type Exact struct {
	mu   sync.Mutex
	seen map[uint64]string
	docs int
	dups int
	pool sync.Pool
}

// NewExact returns an empty exact-duplicate index.
func NewExact() *Exact {
	e := &Exact{seen: make(map[uint64]string)}
	e.pool.New = func() any { b := make([]byte, 0, 4096); return &b }
	return e
}

// Hash returns the xxh3 hash of NormalizeText(text).
func (e *Exact) Hash(text string) uint64 {
	bp := e.pool.Get().(*[]byte)
	b := AppendNormalized((*bp)[:0], text)
	h := xxh3.Hash(b)
	*bp = b
	e.pool.Put(bp)
	return h
}

// Add records a document. When an earlier document had the same normalised
// text it returns that document's id and dup = true; otherwise it returns
// id itself and false.
func (e *Exact) Add(id, text string) (firstID string, dup bool) {
	h := e.Hash(text)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.docs++
	if first, ok := e.seen[h]; ok {
		e.dups++
		return first, true
	}
	e.seen[h] = id
	return id, false
}

// Counts returns the documents added and how many were duplicates.
func (e *Exact) Counts() (docs, dups int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.docs, e.dups
}
