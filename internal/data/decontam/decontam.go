// Package decontam finds training documents that overlap evaluation sets:
// it indexes every word n-gram (default 13, as in GPT-3 and NeMo) of the
// eval items and flags documents sharing one, naming the eval set and item.
// N-grams that occur in more than MaxItemFreq items are too common to mean
// contamination and are dropped from the index.
//
// Words are whitespace-separated fields, lowercased, with Unicode
// punctuation removed ("Janet’s" → "janets"); fields that are only
// punctuation are skipped. Offsets in a Match refer to the original text.
package decontam

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"

	"github.com/kestrel-lm/kestrel/internal/data/ngram"
)

// Config is the decontamination configuration.
type Config struct {
	NGram       int       `toml:"ngram" comment:"n-gram length in normalised words"`
	MaxItemFreq int       `toml:"max_item_freq" comment:"n-grams found in more than this many eval items are ignored as common"`
	Mode        string    `toml:"mode" comment:"drop = drop a matching document; cut = remove the matching spans (plus margin) and keep the rest"`
	Margin      int       `toml:"margin" comment:"cut mode: words removed on each side of a matching span"`
	EvalSets    []EvalSet `toml:"eval_sets" comment:"evaluation sets to protect, as [{name, paths, fields, join_first}]"`
}

// EvalSet is one evaluation set: JSONL files whose items are built from
// Fields. A field holds a string or a list of strings; each string is a
// segment. With JoinFirst, the first field is prefixed to every segment of
// the other fields (HellaSwag context + each ending, PIQA goal + each
// solution, GSM8K question + answer), so n-grams spanning the join are
// indexed too.
type EvalSet struct {
	Name      string   `toml:"name" comment:"eval set name used in reports"`
	Paths     []string `toml:"paths" comment:"JSONL files; ${KESTREL_DATA} expands to the data directory"`
	Fields    []string `toml:"fields" comment:"JSON fields holding the item's text (string or list of strings)"`
	JoinFirst bool     `toml:"join_first" comment:"prefix the first field to each segment of the other fields"`
}

// Modes.
const (
	ModeDrop = "drop"
	ModeCut  = "cut"
)

// DefaultConfig protects GSM8K test, HellaSwag validation and PIQA
// (test and validation) with 13-grams, dropping matching documents.
func DefaultConfig() Config {
	return Config{
		NGram: 13, MaxItemFreq: 10, Mode: ModeDrop, Margin: 50,
		EvalSets: []EvalSet{
			{Name: "gsm8k", Paths: []string{"${KESTREL_DATA}/gsm8k/test.jsonl"}, Fields: []string{"question", "answer"}, JoinFirst: true},
			{Name: "hellaswag", Paths: []string{"${KESTREL_DATA}/hellaswag/hellaswag_val_preprocessed.jsonl"}, Fields: []string{"ctx", "endings"}, JoinFirst: true},
			{Name: "piqa", Paths: []string{"${KESTREL_DATA}/piqa/tests.jsonl", "${KESTREL_DATA}/piqa/valid.jsonl"}, Fields: []string{"goal", "sol1", "sol2"}, JoinFirst: true},
		},
	}
}

func (c Config) validate() error {
	switch {
	case c.NGram < 1 || c.NGram > 64:
		return fmt.Errorf("ngram = %d: must be in [1, 64]", c.NGram)
	case c.MaxItemFreq < 1:
		return fmt.Errorf("max_item_freq = %d: must be >= 1", c.MaxItemFreq)
	case c.Mode != ModeDrop && c.Mode != ModeCut:
		return fmt.Errorf("mode = %q: must be %q or %q", c.Mode, ModeDrop, ModeCut)
	case c.Margin < 0:
		return fmt.Errorf("margin = %d: must be >= 0", c.Margin)
	case len(c.EvalSets) == 0:
		return fmt.Errorf("eval_sets: none given")
	}
	for i, s := range c.EvalSets {
		switch {
		case s.Name == "":
			return fmt.Errorf("eval_sets[%d].name: empty", i)
		case len(s.Paths) == 0:
			return fmt.Errorf("eval_sets[%d] (%s).paths: none given", i, s.Name)
		case len(s.Fields) == 0:
			return fmt.Errorf("eval_sets[%d] (%s).fields: none given", i, s.Name)
		}
	}
	return nil
}

// SetStats describes one indexed eval set.
type SetStats struct {
	Name   string
	Items  int // eval items read
	NGrams int // distinct n-grams indexed for the set (common ones excluded)
	Common int // distinct n-grams of the set dropped as common (> max_item_freq items)
}

// Hit is one eval item a document overlaps.
type Hit struct {
	EvalSet string
	ItemID  string // "<file>:<line>"
	NGram   string // the first matching n-gram as it appears in the document
}

// Match is the result of Index.Check.
type Match struct {
	Hit   bool
	Hits  []Hit    // one per distinct eval item, in order of first match
	Spans [][2]int // byte ranges of the text matching n-grams, widened by the margin, merged, sorted
}

type item struct {
	set int
	id  string
}

// Index is the n-gram index of the eval sets. It is read-only after Build
// and safe for concurrent use.
type Index struct {
	cfg   Config
	items []item
	// post maps an n-gram hash to item+1 (one item) or to -(k+1) for
	// multi[k] (several items, at most MaxItemFreq).
	post    map[uint64]int32
	multi   [][]int32
	bits    []uint64 // bit filter over post's keys
	bitMask uint64
	stats   []SetStats
	pool    sync.Pool
}

// Build reads every eval set and indexes its n-grams. Errors name the file
// and line of bad eval data.
func Build(cfg Config) (*Index, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("decontam config: %w", err)
	}
	x := &Index{cfg: cfg, post: make(map[uint64]int32)}
	x.pool.New = func() any { return &scratch{} }
	common := make(map[uint64]struct{})
	sc := &scratch{}
	x.stats = make([]SetStats, len(cfg.EvalSets))
	for si, set := range cfg.EvalSets {
		st := &x.stats[si]
		st.Name = set.Name
		for _, p := range set.Paths {
			path := p // resolved by the caller (prepare)
			err := readJSONL(path, set, func(line int, segs []string) error {
				it := int32(len(x.items))
				x.items = append(x.items, item{si, filepath.Base(path) + ":" + fmt.Sprint(line)})
				st.Items++
				for _, seg := range segs {
					sc.tokenize(seg)
					for _, h := range sc.gramHashes(cfg.NGram) {
						if _, ok := common[h]; ok {
							continue
						}
						x.addPosting(h, it, common)
					}
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("eval set %s: %w", set.Name, err)
			}
		}
	}
	// Bit filter: most n-grams of a training document are in no eval item;
	// one probe of this bitset (8+ bits per indexed n-gram) skips the map.
	size := uint64(1 << 16)
	for size < 8*uint64(len(x.post)) && size < 1<<30 {
		size <<= 1
	}
	x.bits = make([]uint64, size/64)
	x.bitMask = size - 1
	for h := range x.post {
		b := bitIndex(h) & x.bitMask
		x.bits[b/64] |= 1 << (b % 64)
	}
	return x, nil
}

func bitIndex(h uint64) uint64 { return (h ^ h>>29) * 0xbf58476d1ce4e5b9 >> 20 }

func (x *Index) mayHave(h uint64) bool {
	b := bitIndex(h) & x.bitMask
	return x.bits[b/64]&(1<<(b%64)) != 0
}

// addPosting records that n-gram h occurs in item it. Per-set counts go to
// the set of the n-gram's first item.
func (x *Index) addPosting(h uint64, it int32, common map[uint64]struct{}) {
	v, ok := x.post[h]
	first := it
	switch {
	case !ok:
		x.post[h] = it + 1
		x.stats[x.items[it].set].NGrams++
		return
	case v > 0:
		if v-1 == it {
			return
		}
		first = v - 1
		x.post[h] = -int32(len(x.multi)) - 1
		x.multi = append(x.multi, []int32{v - 1, it})
		if 2 <= x.cfg.MaxItemFreq {
			return
		}
		x.multi[len(x.multi)-1] = nil
	default:
		l := x.multi[-v-1]
		if l[len(l)-1] == it {
			return
		}
		first = l[0]
		l = append(l, it)
		if len(l) <= x.cfg.MaxItemFreq {
			x.multi[-v-1] = l
			return
		}
		x.multi[-v-1] = nil
	}
	// Too common: forget it.
	delete(x.post, h)
	common[h] = struct{}{}
	st := &x.stats[x.items[first].set]
	st.NGrams--
	st.Common++
}

// readJSONL calls fn with the 1-based line number and the segments of each
// non-blank line of path.
func readJSONL(path string, set EvalSet, fn func(line int, segs []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		var parts [][]string
		for _, fld := range set.Fields {
			raw, ok := m[fld]
			if !ok {
				return fmt.Errorf("%s:%d: field %q missing", path, line, fld)
			}
			var s string
			if err := json.Unmarshal(raw, &s); err == nil {
				parts = append(parts, []string{s})
				continue
			}
			var l []string
			if err := json.Unmarshal(raw, &l); err != nil {
				return fmt.Errorf("%s:%d: field %q is neither a string nor a list of strings", path, line, fld)
			}
			parts = append(parts, l)
		}
		var segs []string
		if set.JoinFirst && len(parts) > 1 {
			first := strings.Join(parts[0], " ")
			for _, p := range parts[1:] {
				for _, s := range p {
					segs = append(segs, first+"\n"+s)
				}
			}
		} else {
			for _, p := range parts {
				segs = append(segs, p...)
			}
		}
		empty := true
		for _, s := range segs {
			if strings.TrimSpace(s) != "" {
				empty = false
			}
		}
		if empty {
			return fmt.Errorf("%s:%d: item has no text in fields %v", path, line, set.Fields)
		}
		if err := fn(line, segs); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	return nil
}

// Stats returns items and indexed n-grams per eval set, in config order.
func (x *Index) Stats() []SetStats { return slices.Clone(x.stats) }

// Config returns the index's configuration.
func (x *Index) Config() Config { return x.cfg }

// Mode returns the configured mode ("drop" or "cut").
func (x *Index) Mode() string { return x.cfg.Mode }

// scratch holds one text's words.
type scratch struct {
	starts, ends []int
	hashes       []uint64
	grams        []uint64
	buf          []byte
}

// tokenize fills the word spans and hashes of text's normalised words.
func (s *scratch) tokenize(text string) {
	s.starts, s.ends, s.hashes = s.starts[:0], s.ends[:0], s.hashes[:0]
	i := 0
	for i < len(text) {
		// skip spaces
		for i < len(text) {
			c := text[i]
			if c < utf8.RuneSelf {
				if c != ' ' && c != '\n' && c != '\t' && c != '\r' && c != '\v' && c != '\f' {
					break
				}
				i++
				continue
			}
			r, n := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsSpace(r) {
				break
			}
			i += n
		}
		if i >= len(text) {
			break
		}
		start := i
		s.buf = s.buf[:0]
		for i < len(text) {
			c := text[i]
			if c < utf8.RuneSelf {
				if c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
					break
				}
				i++
				if asciiPunct[c] {
					continue
				}
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				s.buf = append(s.buf, c)
				continue
			}
			r, n := utf8.DecodeRuneInString(text[i:])
			if unicode.IsSpace(r) {
				break
			}
			i += n
			if unicode.IsPunct(r) {
				continue
			}
			s.buf = utf8.AppendRune(s.buf, unicode.ToLower(r))
		}
		if len(s.buf) == 0 {
			continue
		}
		s.starts = append(s.starts, start)
		s.ends = append(s.ends, i)
		s.hashes = append(s.hashes, xxh3.Hash(s.buf))
	}
}

var asciiPunct = func() (t [128]bool) {
	for c := 0; c < 128; c++ {
		t[c] = unicode.IsPunct(rune(c))
	}
	return
}()

// gramHashes returns, for every j, a hash of words j..j+k-1: a
// polynomial rolling hash mod 2^64 of the (xxh3) word hashes, O(1) per
// n-gram.
func (s *scratch) gramHashes(k int) []uint64 {
	s.grams = ngram.Rolling(s.grams[:0], s.hashes, k)
	return s.grams
}

// Check reports the eval items text shares an n-gram with, and the byte
// spans to cut. id is not used for matching; it is accepted so callers can
// pass their document id uniformly.
func (x *Index) Check(id, text string) Match {
	_ = id
	s := x.pool.Get().(*scratch)
	defer x.pool.Put(s)
	s.tokenize(text)
	n := x.cfg.NGram
	var m Match
	var seen map[int32]bool
	for i, g := range s.gramHashes(n) {
		if !x.mayHave(g) {
			continue
		}
		v, ok := x.post[g]
		if !ok {
			continue
		}
		if seen == nil {
			seen = map[int32]bool{}
		}
		gram := text[s.starts[i]:s.ends[i+n-1]]
		addItem := func(it int32) {
			if seen[it] {
				return
			}
			seen[it] = true
			m.Hits = append(m.Hits, Hit{EvalSet: x.cfg.EvalSets[x.items[it].set].Name, ItemID: x.items[it].id, NGram: gram})
		}
		if v > 0 {
			addItem(v - 1)
		} else {
			for _, it := range x.multi[-v-1] {
				addItem(it)
			}
		}
		a := s.starts[max(0, i-x.cfg.Margin)]
		b := s.ends[min(len(s.ends)-1, i+n-1+x.cfg.Margin)]
		if k := len(m.Spans); k > 0 && a <= m.Spans[k-1][1] {
			m.Spans[k-1][1] = max(m.Spans[k-1][1], b)
		} else {
			m.Spans = append(m.Spans, [2]int{a, b})
		}
	}
	m.Hit = len(m.Hits) > 0
	return m
}

// Cut returns text with m's spans removed. The pieces left are trimmed of
// surrounding whitespace and joined with a newline; the result is "" when
// nothing is left.
func (x *Index) Cut(text string, m Match) string {
	if len(m.Spans) == 0 {
		return text
	}
	var pieces []string
	prev := 0
	for _, sp := range m.Spans {
		if sp[0] < prev || sp[1] > len(text) || sp[0] > sp[1] {
			continue // not from this text; ignore rather than panic
		}
		if p := strings.TrimSpace(text[prev:sp[0]]); p != "" {
			pieces = append(pieces, p)
		}
		prev = sp[1]
	}
	if p := strings.TrimSpace(text[prev:]); p != "" {
		pieces = append(pieces, p)
	}
	return strings.Join(pieces, "\n")
}
