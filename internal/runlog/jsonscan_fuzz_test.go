package runlog

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseLine: any input parses or fails without panicking, within the
// bounds; an error names the byte offset where the line went wrong, inside
// the line; parsing is deterministic; and a parsed record written back as
// one flat object (names as keys, numbers in the run's encoding) parses to
// the same fields in the same order (parse → write → parse).
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"step":3,"loss":1.5e-2,"ok":true,"no":false,"x":null}`,
		` { "a" : { "b" : [1, 2, {"c": -3}] } , "s": "hi\"\/there" } `,
		`{"v":NaN,"w":"Infinity","z":-Infinity}`,
		`{"unicode":"\u00e9t\u00e9"}`,
		`{"a":[[[[[[1]]]]]]}`, `{"a":1`, `{"a":"x}`, `[1]`, `{"a":-}`, `{"a":-I}`,
		`{"big":1e400,"tiny":-1e-400,"neg0":-0,"dup":1,"dup":"s"}`,
		string(nested(MaxDepth + 1)),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rec := NewRecord()
		err := ParseLine(line, rec)
		if err != nil {
			checkOffsetError(t, err, len(line))
			return
		}
		for _, kv := range rec.kvs {
			if len(kv.name) > MaxNameBytes || strings.Count(kv.name, "/") > MaxDepth {
				t.Fatalf("name %.40q… beyond the bounds", kv.name)
			}
		}
		again := NewRecord()
		if err := ParseLine(line, again); err != nil || !sameFields(rec, again) {
			t.Fatalf("second parse: %v, %d fields, first %d", err, len(again.kvs), len(rec.kvs))
		}
		flat := flatLine(rec)
		back := NewRecord()
		if err := ParseLine(flat, back); err != nil || !sameFields(rec, back) {
			t.Fatalf("written back as %s: %v, fields %v, want %v", flat, err, back.kvs, rec.kvs)
		}
	})
}

// checkOffsetError asserts err reads "offset N: …" with N inside the line.
func checkOffsetError(t *testing.T, err error, n int) {
	t.Helper()
	rest, ok := strings.CutPrefix(err.Error(), "offset ")
	num, _, ok2 := strings.Cut(rest, ": ")
	off, err2 := strconv.Atoi(num)
	if !ok || !ok2 || err2 != nil || off < 0 || off > n {
		t.Fatalf("error %q does not name an offset within the %d-byte line", err, n)
	}
}

// flatLine writes rec as one flat JSON object in the run's encoding.
func flatLine(rec *Record) []byte {
	b := []byte{'{'}
	for i, kv := range rec.kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, kv.name)
		b = append(b, ':')
		if kv.isS {
			b = strconv.AppendQuote(b, kv.str)
		} else {
			b = AppendFloat(b, kv.num)
		}
	}
	return append(b, '}')
}

// sameFields reports whether two records hold the same fields in order
// (NaN equal to NaN, -0 to 0).
func sameFields(a, b *Record) bool {
	if len(a.kvs) != len(b.kvs) {
		return false
	}
	for i, x := range a.kvs {
		y := b.kvs[i]
		if x.name != y.name || x.isS != y.isS || x.str != y.str ||
			x.num != y.num && !(math.IsNaN(x.num) && math.IsNaN(y.num)) {
			return false
		}
	}
	return true
}
