package runlog

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"
)

// Record is one metrics line flattened: nested objects and arrays become
// slash-joined names ("vitals/layer0/max_attn_logit", "attn/1/0"); true and
// false become 1 and 0; null leaves the name out.
type Record struct {
	kvs    []kv
	intern map[string]string // key bytes → one shared string, so lines allocate no names
}

// NewRecord returns an empty record to parse lines into (reuse it).
func NewRecord() *Record { return &Record{intern: map[string]string{}} }

// Num returns the numeric value of name.
func (r *Record) Num(name string) (float64, bool) {
	for i := range r.kvs {
		if !r.kvs[i].isS && r.kvs[i].name == name {
			return r.kvs[i].num, true
		}
	}
	return math.NaN(), false
}

// Str returns the string value of name.
func (r *Record) Str(name string) (string, bool) {
	for i := range r.kvs {
		if r.kvs[i].isS && r.kvs[i].name == name {
			return r.kvs[i].str, true
		}
	}
	return "", false
}

// Each calls fn for every numeric field of the record.
func (r *Record) Each(fn func(name string, v float64)) {
	for i := range r.kvs {
		if !r.kvs[i].isS {
			fn(r.kvs[i].name, r.kvs[i].num)
		}
	}
}

// set replaces (or adds) the numeric field name.
func (r *Record) set(name string, v float64) {
	for i := range r.kvs {
		if r.kvs[i].name == name {
			r.kvs[i] = kv{name: name, num: v}
			return
		}
	}
	r.kvs = append(r.kvs, kv{name: name, num: v})
}

// EachStr calls fn for every string field of the record (array elements
// included, as "name/0", "name/1" …), in line order.
func (r *Record) EachStr(fn func(name, s string)) {
	for i := range r.kvs {
		if r.kvs[i].isS {
			fn(r.kvs[i].name, r.kvs[i].str)
		}
	}
}

// Bounds of one line's JSON value. Within them ParseLine's time and memory
// are linear in the line's length: without them a value nested d deep
// builds d names of up to d bytes each (a 200 KB line of brackets cost 19 GB).
const (
	// MaxDepth is the deepest nesting of objects and arrays accepted.
	MaxDepth = 64
	// MaxNameBytes bounds a flattened field name ("a/b/0/c").
	MaxNameBytes = 1024
	// maxInterned bounds the names a Record keeps for reuse.
	maxInterned = 1 << 16
)

// ParseLine parses one JSON object into rec, replacing its contents. It is a
// small hand-written parser because the dashboard must read 100,000-line
// files in well under a second; it accepts standard JSON (plus NaN and
// ±Infinity, bare or quoted) and reports the byte offset of an error. A
// value nested deeper than MaxDepth or a flattened name longer than
// MaxNameBytes is an error, so a hostile line costs time and memory linear
// in its length.
func ParseLine(line []byte, rec *Record) error {
	p := parser{b: line, out: rec.kvs[:0], intern: rec.intern}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return p.err("expected '{'")
	}
	if err := p.object(""); err != nil {
		return err
	}
	p.ws()
	if p.i != len(p.b) {
		return p.err("trailing data")
	}
	rec.kvs = p.out
	return nil
}

type kv struct {
	name string
	num  float64
	str  string
	isS  bool
}

type parser struct {
	b      []byte
	i      int
	depth  int // objects and arrays open
	out    []kv
	intern map[string]string
}

// enter opens one level of nesting, refusing one past MaxDepth.
func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.err(fmt.Sprintf("nested deeper than %d levels", MaxDepth))
	}
	return nil
}

func (p *parser) err(msg string) error { return fmt.Errorf("offset %d: %s", p.i, msg) }

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) join(prefix, name string) (string, error) {
	if len(prefix)+1+len(name) > MaxNameBytes {
		return "", p.err(fmt.Sprintf("field name over %d bytes", MaxNameBytes))
	}
	if prefix == "" {
		return name, nil
	}
	var buf [128]byte
	b := append(append(append(buf[:0], prefix...), '/'), name...)
	if s, ok := p.intern[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if len(p.intern) < maxInterned {
		p.intern[s] = s
	}
	return s, nil
}

func (p *parser) object(prefix string) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer func() { p.depth-- }()
	p.i++ // '{'
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.ws()
		key, err := p.key()
		if err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return p.err("expected ':'")
		}
		p.i++
		p.ws()
		name, err := p.join(prefix, key)
		if err != nil {
			return err
		}
		if err := p.value(name); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return p.err("unterminated object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.err("expected ',' or '}'")
		}
	}
}

func (p *parser) array(prefix string) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer func() { p.depth-- }()
	p.i++ // '['
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	for n := 0; ; n++ {
		p.ws()
		name, err := p.join(prefix, strconv.Itoa(n))
		if err != nil {
			return err
		}
		if err := p.value(name); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return p.err("unterminated array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return p.err("expected ',' or ']'")
		}
	}
}

func (p *parser) value(name string) error {
	if p.i >= len(p.b) {
		return p.err("expected a value")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(name)
	case c == '[':
		return p.array(name)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		// Non-finite numbers are written as strings by some loggers.
		switch s {
		case "NaN", "nan":
			p.out = append(p.out, kv{name: name, num: math.NaN()})
		case "Infinity", "inf", "Inf", "+Inf":
			p.out = append(p.out, kv{name: name, num: math.Inf(1)})
		case "-Infinity", "-inf", "-Inf":
			p.out = append(p.out, kv{name: name, num: math.Inf(-1)})
		default:
			p.out = append(p.out, kv{name: name, str: s, isS: true})
		}
		return nil
	case c == 't':
		return p.lit("true", name, 1)
	case c == 'f':
		return p.lit("false", name, 0)
	case c == 'n':
		if err := p.lit("null", name, 0); err != nil {
			return err
		}
		p.out = p.out[:len(p.out)-1] // null: no value
		return nil
	case c == 'N':
		return p.lit("NaN", name, math.NaN())
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.b) {
			c := p.b[p.i]
			if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
				p.i++
				continue
			}
			break
		}
		tok := p.b[start:p.i]
		if string(tok) == "-" && p.i < len(p.b) && p.b[p.i] == 'I' {
			p.i = start
			return p.lit("-Infinity", name, math.Inf(-1))
		}
		v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(tok), len(tok)), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			p.i = start
			return p.err("bad number")
		}
		p.out = append(p.out, kv{name: name, num: v})
		return nil
	case c == 'I':
		return p.lit("Infinity", name, math.Inf(1))
	}
	return p.err("unexpected character")
}

func (p *parser) lit(word, name string, v float64) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.err("bad literal")
	}
	p.i += len(word)
	p.out = append(p.out, kv{name: name, num: v})
	return nil
}

// key parses an object key, interned so repeated lines allocate nothing.
func (p *parser) key() (string, error) {
	if p.i < len(p.b) && p.b[p.i] == '"' {
		for j := p.i + 1; j < len(p.b); j++ {
			if p.b[j] == '\\' {
				break
			}
			if p.b[j] == '"' {
				if s, ok := p.intern[string(p.b[p.i+1:j])]; ok {
					p.i = j + 1
					return s, nil
				}
				break
			}
		}
	}
	s, err := p.str()
	if err == nil && len(p.intern) < maxInterned {
		p.intern[s] = s
	}
	return s, err
}

// str parses a JSON string. Keys and values without escapes (the common
// case) are sliced without copying the bytes twice.
func (p *parser) str() (string, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", p.err("expected a string")
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch p.b[j] {
		case '"':
			p.i = j + 1
			return string(p.b[start:j]), nil
		case '\\':
			return p.slowStr()
		}
	}
	return "", p.err("unterminated string")
}

func (p *parser) slowStr() (string, error) {
	start := p.i
	j := p.i + 1
	for ; j < len(p.b); j++ {
		if p.b[j] == '\\' {
			j++
			continue
		}
		if p.b[j] == '"' {
			break
		}
	}
	if j >= len(p.b) {
		return "", p.err("unterminated string")
	}
	s, err := strconv.Unquote(string(p.b[start : j+1]))
	if err != nil {
		// JSON escapes are a subset of Go's except \/ ; handle it.
		s2, err2 := strconv.Unquote(replaceSlashEscape(string(p.b[start : j+1])))
		if err2 != nil {
			return "", p.err("bad string escape")
		}
		s = s2
	}
	p.i = j + 1
	return s, nil
}

func replaceSlashEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == '/' {
			out = append(out, '/')
			i++
			continue
		}
		out = append(out, s[i])
		if s[i] == '\\' && i+1 < len(s) {
			out = append(out, s[i+1])
			i++
		}
	}
	return string(out)
}
