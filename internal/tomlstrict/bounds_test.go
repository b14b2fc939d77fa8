package tomlstrict

import (
	"runtime"
	"strings"
	"testing"
)

type boundsDoc struct {
	A any    `toml:"a"`
	S string `toml:"s"`
}

// TestDecodeBounds: nesting past MaxDepth is an error naming the file and
// line, in bounded memory (before: 10,000 nested arrays allocated 156 MB;
// the cost grows with the square of the depth), and brackets inside
// strings and comments do not count; a document over MaxBytes is refused.
func TestDecodeBounds(t *testing.T) {
	nest := func(d int) string { return strings.Repeat("[", d) + strings.Repeat("]", d) }
	for _, c := range []struct {
		name, doc, want string
	}{
		{"depth 64", "a = " + nest(MaxDepth) + "\n", ""},
		{"depth 65", "s = 'x'\n\na = " + nest(MaxDepth+1) + "\n", "cfg.toml:3: arrays or inline tables nested deeper than 64 levels"},
		{"depth 10000", "a = " + nest(10000) + "\n", "nested deeper than 64 levels"},
		{"inline tables", "a = " + strings.Repeat("{b = ", 70) + "1" + strings.Repeat("}", 70) + "\n", "nested deeper"},
		{"brackets in a basic string", `s = "` + strings.Repeat("[", 100) + `\"` + `"` + "\na = 1\n", ""},
		{"brackets in a literal string", "s = '" + strings.Repeat("{", 100) + "'\n", ""},
		{"brackets in a multi-line string", "s = \"\"\"\n" + strings.Repeat("[", 100) + "\n\"\"\"\n", ""},
		{"brackets in a comment", "# " + strings.Repeat("[", 100) + "\na = 1\n", ""},
		{"over the size bound", "s = '" + strings.Repeat("x", MaxBytes) + "'\n", "over the 8388608-byte limit"},
	} {
		var v boundsDoc
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err = Decode([]byte(c.doc), "cfg.toml", &v)
		runtime.ReadMemStats(&after)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > uint64(16*len(c.doc))+8<<20 {
			t.Errorf("%s: %d bytes allocated for a %d-byte document", c.name, n, len(c.doc))
		}
	}
}
