package tokenizer

import (
	"container/heap"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// AddedToken is a token matched as a whole string rather than produced by
// merges: special tokens (<|endoftext|>, BOS, EOS, PAD …) and Hugging Face
// "added tokens".
type AddedToken struct {
	ID         int32
	Content    string
	Special    bool // special tokens are only recognised by EncodeSpecial
	SingleWord bool // kept for tokenizer.json round trips
	LStrip     bool // kept for tokenizer.json round trips
	RStrip     bool // kept for tokenizer.json round trips
	Normalized bool // kept for tokenizer.json round trips
}

// Tokenizer is a byte-level BPE tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	pattern string   // the pre-tokenisation regex
	split   splitter // its implementation
	// vocab[id] is the byte string of ordinary token id (nil for ids of
	// added tokens or holes).
	vocab      [][]byte
	tokID      map[string]int32 // ordinary token bytes → id
	byteID     [256]int32
	merges     [][2]int32        // in rank order
	mergeOf    map[uint64]uint64 // a<<32|b → rank<<32|new id
	added      []AddedToken      // sorted by id
	addedID    map[string]int32
	plainAdded []AddedToken // non-special added tokens, matched in any text
	size       int          // 1 + largest id
	eot        int32
	hasEOT     bool

	// options that change encoding
	ignoreMerges   bool // a pre-token that is itself a token is not merged (tiktoken)
	nfc            bool // NFC-normalise text first (HF normalizer)
	addPrefixSpace bool // HF ByteLevel add_prefix_space

	hashOnce sync.Once
	hash     string
	pool     sync.Pool // *encState
}

// cacheMaxEntries bounds each encoder's pre-token cache; it is cleared when
// full. cacheMaxLen is the longest pre-token (bytes) that is cached.
const (
	cacheMaxEntries = 1 << 16
	cacheMaxLen     = 64
)

// encState is per-goroutine scratch space plus the pre-token cache.
type encState struct {
	cache map[string]uint64 // pre-token → off<<16 | n into arena
	arena []int32
	syms  []int32
	ranks []int32
	h     mergeHeap
	next  []int32
	prev  []int32
}

func (t *Tokenizer) state() *encState {
	if st, ok := t.pool.Get().(*encState); ok {
		return st
	}
	return &encState{cache: make(map[string]uint64, 1024)}
}

// VocabSize is the number of ids (1 + the largest id, added tokens included).
func (t *Tokenizer) VocabSize() int { return t.size }

// Pattern returns the pre-tokenisation regular expression.
func (t *Tokenizer) Pattern() string { return t.pattern }

// NumMerges is the number of BPE merges.
func (t *Tokenizer) NumMerges() int { return len(t.merges) }

// Added returns the added and special tokens, sorted by id.
func (t *Tokenizer) Added() []AddedToken { return append([]AddedToken(nil), t.added...) }

// SpecialID returns the id of the added/special token with this content.
func (t *Tokenizer) SpecialID(name string) (int32, bool) {
	id, ok := t.addedID[name]
	return id, ok
}

// eotNames are the contents accepted as end-of-text, in order of preference.
var eotNames = []string{"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eos|>"}

// bosNames are the contents accepted as beginning-of-text.
var bosNames = []string{"<|begin_of_text|>", "<s>", "<bos>", "<|bos|>", "<|startoftext|>"}

// EOT is the end-of-text id (<|endoftext|>, or another EOS-like special
// token, or the first special token). It is 0 when the tokenizer has none;
// HasEOT tells.
func (t *Tokenizer) EOT() int32 { return t.eot }

// HasEOT reports whether the tokenizer has an end-of-text token.
func (t *Tokenizer) HasEOT() bool { return t.hasEOT }

// BOS returns a beginning-of-text token (<|begin_of_text|>, <s> …) or, when
// there is none, the end-of-text token (GPT-2 uses <|endoftext|> for both).
func (t *Tokenizer) BOS() (int32, bool) {
	for _, n := range bosNames {
		if id, ok := t.addedID[n]; ok {
			return id, true
		}
	}
	return t.eot, t.hasEOT
}

func (t *Tokenizer) findEOT() {
	t.hasEOT = false
	for _, n := range eotNames {
		if id, ok := t.addedID[n]; ok {
			t.eot, t.hasEOT = id, true
			return
		}
	}
	for _, a := range t.added {
		if a.Special {
			t.eot, t.hasEOT = a.ID, true
			return
		}
	}
}

// IsAdded reports whether id is an added token (a special token such as
// <|endoftext|>, or a Hugging Face "added token") rather than a merge
// token. Decoding a document's text without its separators skips them.
func (t *Tokenizer) IsAdded(id int32) bool {
	for _, a := range t.added {
		if a.ID == id {
			return true
		}
	}
	return false
}

// Token returns the bytes of id (the content of an added token), or false
// for an unknown id.
func (t *Tokenizer) Token(id int32) ([]byte, bool) {
	if uint(id) < uint(len(t.vocab)) && t.vocab[id] != nil {
		return t.vocab[id], true
	}
	for _, a := range t.added {
		if a.ID == id {
			return []byte(a.Content), true
		}
	}
	return nil, false
}

// Encode returns the ids of text. Special tokens written in the text are
// encoded as ordinary text (use EncodeSpecial to recognise them), so a
// document can never inject <|endoftext|>.
func (t *Tokenizer) Encode(text string) []int32 {
	return t.AppendEncode(nil, text)
}

// AppendEncode appends the ids of text to dst and returns the extended slice.
func (t *Tokenizer) AppendEncode(dst []int32, text string) []int32 {
	if t.nfc && !norm.NFC.IsNormalString(text) {
		text = norm.NFC.String(text)
	}
	if t.addPrefixSpace && len(text) > 0 && text[0] != ' ' {
		text = " " + text
	}
	st := t.state()
	if len(t.plainAdded) > 0 {
		dst = t.encodeAdded(st, dst, text, t.plainAdded)
	} else {
		dst = t.encodeOrdinary(st, dst, text)
	}
	t.pool.Put(st)
	return dst
}

// EncodeSpecial is Encode, except that the contents of special tokens
// (e.g. "<|endoftext|>") in text become their ids.
func (t *Tokenizer) EncodeSpecial(text string) []int32 {
	if t.nfc && !norm.NFC.IsNormalString(text) {
		text = norm.NFC.String(text)
	}
	st := t.state()
	all := make([]AddedToken, 0, len(t.added))
	all = append(all, t.added...)
	dst := t.encodeAdded(st, nil, text, all)
	t.pool.Put(st)
	return dst
}

// encodeAdded matches added tokens (leftmost, then longest) and encodes the
// text between them as ordinary text.
func (t *Tokenizer) encodeAdded(st *encState, dst []int32, text string, toks []AddedToken) []int32 {
	var first [256]bool
	for _, a := range toks {
		if a.Content != "" {
			first[a.Content[0]] = true
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		if !first[text[i]] {
			continue
		}
		best := -1
		for k, a := range toks {
			if len(a.Content) > 0 && text[i] == a.Content[0] && len(text)-i >= len(a.Content) && text[i:i+len(a.Content)] == a.Content {
				if best < 0 || len(a.Content) > len(toks[best].Content) {
					best = k
				}
			}
		}
		if best < 0 {
			continue
		}
		dst = t.encodeOrdinary(st, dst, text[start:i])
		dst = append(dst, toks[best].ID)
		i += len(toks[best].Content) - 1
		start = i + 1
	}
	return t.encodeOrdinary(st, dst, text[start:])
}

func (t *Tokenizer) encodeOrdinary(st *encState, dst []int32, text string) []int32 {
	t.split.split(text, func(piece string) {
		dst = t.encodePiece(st, dst, piece)
	})
	return dst
}

// encodePiece appends the BPE ids of one pre-token.
func (t *Tokenizer) encodePiece(st *encState, dst []int32, piece string) []int32 {
	if len(piece) == 1 {
		if id := t.byteID[piece[0]]; id != noRank {
			dst = append(dst, id)
		}
		return dst
	}
	if t.ignoreMerges {
		if id, ok := t.tokID[piece]; ok {
			return append(dst, id)
		}
	}
	cacheable := len(piece) <= cacheMaxLen
	if cacheable {
		if v, ok := st.cache[piece]; ok {
			return append(dst, st.arena[v>>16:v>>16+v&0xffff]...)
		}
	}
	n0 := len(dst)
	if len(piece) <= 48 {
		dst = t.bpeSmall(st, dst, piece)
	} else {
		dst = t.bpeLarge(st, dst, piece)
	}
	if cacheable {
		if len(st.cache) >= cacheMaxEntries {
			clear(st.cache)
			st.arena = st.arena[:0]
		}
		st.cache[piece] = uint64(len(st.arena))<<16 | uint64(len(dst)-n0)
		st.arena = append(st.arena, dst[n0:]...)
	}
	return dst
}

// noRank marks "no merge" among ranks and "no token" among ids (a byte
// missing from the vocabulary, a symbol merged away): above every real rank
// and id.
const noRank = int32(math.MaxInt32)

func (t *Tokenizer) rankOf(a, b int32) (rank, id int32) {
	if v, ok := t.mergeOf[uint64(a)<<32|uint64(b)]; ok {
		return int32(v >> 32), int32(v)
	}
	return noRank, 0
}

// bpeSmall merges with a linear scan for the lowest-ranked pair (leftmost
// on ties): quadratic, and fastest for short pre-tokens.
func (t *Tokenizer) bpeSmall(st *encState, dst []int32, piece string) []int32 {
	syms := st.syms[:0]
	for i := 0; i < len(piece); i++ {
		if id := t.byteID[piece[i]]; id != noRank {
			syms = append(syms, id)
		}
	}
	ranks := st.ranks[:0]
	for i := 0; i+1 < len(syms); i++ {
		r, _ := t.rankOf(syms[i], syms[i+1])
		ranks = append(ranks, r)
	}
	for len(syms) > 1 {
		best, bi := noRank, -1
		for i, r := range ranks {
			if r < best {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		_, id := t.rankOf(syms[bi], syms[bi+1])
		syms[bi] = id
		syms = append(syms[:bi+1], syms[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi > 0 {
			ranks[bi-1], _ = t.rankOf(syms[bi-1], syms[bi])
		}
		if bi < len(ranks) {
			ranks[bi], _ = t.rankOf(syms[bi], syms[bi+1])
		}
	}
	st.syms, st.ranks = syms, ranks
	return append(dst, syms...)
}

// mergeCand is a candidate merge of the symbols at pos and next[pos].
type mergeCand struct {
	rank int32
	pos  int32
	a, b int32
}

type mergeHeap []mergeCand

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeCand)) }
func (h *mergeHeap) Pop() any     { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

// bpeLarge merges with a priority queue over a linked list of symbols:
// O(n log n) for long pre-tokens (runs of digits or spaces). Same result
// as bpeSmall: lowest rank first, leftmost on ties.
func (t *Tokenizer) bpeLarge(st *encState, dst []int32, piece string) []int32 {
	syms := st.syms[:0]
	next, prev := st.next[:0], st.prev[:0]
	for i := 0; i < len(piece); i++ {
		if id := t.byteID[piece[i]]; id != noRank {
			next = append(next, int32(len(syms)+1))
			prev = append(prev, int32(len(syms)-1))
			syms = append(syms, id)
		}
	}
	n := len(syms)
	if n == 0 {
		return dst
	}
	next[n-1] = -1
	h := st.h[:0]
	for i := 0; i+1 < n; i++ {
		if r, _ := t.rankOf(syms[i], syms[i+1]); r != noRank {
			h = append(h, mergeCand{r, int32(i), syms[i], syms[i+1]})
		}
	}
	heap.Init(&h)
	alive := func(p int32) bool { return p >= 0 && syms[p] != noRank }
	for h.Len() > 0 {
		c := heap.Pop(&h).(mergeCand)
		p := c.pos
		if !alive(p) || syms[p] != c.a {
			continue
		}
		q := next[p]
		if q < 0 || syms[q] != c.b {
			continue
		}
		_, id := t.rankOf(c.a, c.b)
		syms[p] = id
		syms[q] = noRank
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		if pp := prev[p]; pp >= 0 {
			if r, _ := t.rankOf(syms[pp], id); r != noRank {
				heap.Push(&h, mergeCand{r, pp, syms[pp], id})
			}
		}
		if nq := next[p]; nq >= 0 {
			if r, _ := t.rankOf(id, syms[nq]); r != noRank {
				heap.Push(&h, mergeCand{r, p, id, syms[nq]})
			}
		}
	}
	for p := int32(0); p >= 0; p = next[p] {
		dst = append(dst, syms[p])
	}
	st.syms, st.next, st.prev, st.h = syms, next, prev, h
	return dst
}

// Decode returns the bytes of ids, exactly: Decode(Encode(s)) == s for
// every byte string s (invalid UTF-8 included) when the tokenizer has no
// normalizer. An unknown id decodes to U+FFFD.
func (t *Tokenizer) Decode(ids []int32) []byte {
	return t.AppendDecode(nil, ids)
}

// AppendDecode appends the bytes of ids to dst.
func (t *Tokenizer) AppendDecode(dst []byte, ids []int32) []byte {
	for _, id := range ids {
		if uint(id) < uint(len(t.vocab)) && t.vocab[id] != nil {
			dst = append(dst, t.vocab[id]...)
			continue
		}
		if b, ok := t.Token(id); ok {
			dst = append(dst, b...)
			continue
		}
		dst = utf8.AppendRune(dst, utf8.RuneError)
	}
	return dst
}

// DecodeString is Decode as a string.
func (t *Tokenizer) DecodeString(ids []int32) string { return string(t.Decode(ids)) }

// ValidID reports whether id is a token of this tokenizer.
func (t *Tokenizer) ValidID(id int32) bool {
	_, ok := t.Token(id)
	return ok
}

// build fills the derived tables from vocab, merges and added tokens.
func (t *Tokenizer) build() error {
	isAdded := make(map[int32]bool, len(t.added))
	for _, a := range t.added {
		isAdded[a.ID] = true
	}
	t.tokID = make(map[string]int32, len(t.vocab))
	for id, b := range t.vocab {
		if b != nil && !isAdded[int32(id)] {
			t.tokID[string(b)] = int32(id)
		}
	}
	for id, b := range t.vocab { // added tokens only where no merge token has their bytes
		if _, dup := t.tokID[string(b)]; b != nil && isAdded[int32(id)] && !dup {
			t.tokID[string(b)] = int32(id)
		}
	}
	missing := 0
	for c := 0; c < 256; c++ {
		id, ok := t.tokID[string([]byte{byte(c)})]
		if !ok {
			// GPT-NeoX lacks bytes that never occur in UTF-8 (0xC0,
			// 0xC1, 0xF5–0xFF); such bytes are dropped when encoding,
			// as Hugging Face does without an unk token.
			id = noRank
			missing++
		}
		t.byteID[c] = id
	}
	if missing > 16 {
		return fmt.Errorf("vocabulary lacks %d of the 256 single bytes: not a byte-level BPE", missing)
	}
	t.mergeOf = make(map[uint64]uint64, len(t.merges))
	for r, m := range t.merges {
		if int(m[0]) >= len(t.vocab) || int(m[1]) >= len(t.vocab) || t.vocab[m[0]] == nil || t.vocab[m[1]] == nil {
			return fmt.Errorf("merge %d: unknown token id", r)
		}
		joined := string(t.vocab[m[0]]) + string(t.vocab[m[1]])
		id, ok := t.tokID[joined]
		if !ok {
			return fmt.Errorf("merge %d (%q + %q): result %q is not in the vocabulary", r, t.vocab[m[0]], t.vocab[m[1]], joined)
		}
		key := uint64(m[0])<<32 | uint64(m[1])
		if _, dup := t.mergeOf[key]; !dup {
			t.mergeOf[key] = uint64(r)<<32 | uint64(id)
		}
	}
	t.size = len(t.vocab)
	t.addedID = make(map[string]int32, len(t.added))
	t.plainAdded = nil
	for _, a := range t.added {
		if a.Content == "" {
			return fmt.Errorf("added token %d has empty content", a.ID)
		}
		if _, dup := t.addedID[a.Content]; dup {
			return fmt.Errorf("added token %q appears twice", a.Content)
		}
		t.addedID[a.Content] = a.ID
		if int(a.ID)+1 > t.size {
			t.size = int(a.ID) + 1
		}
		if !a.Special {
			t.plainAdded = append(t.plainAdded, a)
		}
	}
	t.findEOT()
	return nil
}
