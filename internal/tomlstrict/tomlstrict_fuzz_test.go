package tomlstrict

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fuzzDoc is a typed target, so unknown keys and type errors occur.
type fuzzDoc struct {
	A int     `toml:"a"`
	S string  `toml:"s"`
	F float64 `toml:"f"`
	T struct {
		B []float64 `toml:"b"`
	} `toml:"t"`
	U []struct {
		C bool `toml:"c"`
	} `toml:"u"`
}

// FuzzDecode: any document decodes or is refused without panicking, into
// a map or a struct; every error names the file first and, where it is an
// *Error, a line inside the document; and a document that decodes into a
// map survives Overlay (the map written as TOML and decoded again: parse →
// write → parse) unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"a = 1\n", "s = \"x[\"\na = [[1], [2]]\n", "a = {b = {c = [1]}}\n", "# [[[\n", "s = '''\n[[\n'''\n",
		"s = \"\\\"[\"\n", "[t]\na = 1\n[[u]]\nb = 2\n", "a = " + strings.Repeat("[", 70) + strings.Repeat("]", 70),
		"a = 1\nf = nan\n", "[t]\nb = [1.5, -inf]\n", "a = 'x'\n", "d = 1979-05-27T07:32:00Z\nl = 07:32:00\n",
		"a = 1\nz = 2\n[t]\nq = 3\n", "x.y.z = 1\n[x]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		var doc fuzzDoc
		checkNamed(t, Decode(data, "fuzz.toml", &doc), lines)
		var m map[string]any
		err := Decode(data, "fuzz.toml", &m)
		checkNamed(t, err, lines)
		if err != nil || len(m) == 0 {
			return
		}
		var back map[string]any
		if err := Overlay(m, "fuzz.toml", &back); err != nil {
			t.Fatalf("the decoded map does not decode again: %v", err)
		}
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip changed the document:\n%#v\n%#v", m, back)
		}
	})
}

// checkNamed asserts err (if any) starts with the document's name and
// each *Error in it has that name and a line inside the document.
func checkNamed(t *testing.T, err error, lines int) {
	t.Helper()
	if err == nil {
		return
	}
	for _, e := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(e, "fuzz.toml") {
			t.Fatalf("error %q does not name the file", e)
		}
	}
	Each(err, func(e *Error) {
		if e.Name != "fuzz.toml" || e.Line < 0 || e.Line > lines {
			t.Fatalf("error %+v: not at a line of the %d-line document", e, lines)
		}
	})
	var te *Error
	if !errors.As(err, &te) && !strings.HasPrefix(err.Error(), "fuzz.toml: ") {
		t.Fatalf("error %q", err)
	}
}
