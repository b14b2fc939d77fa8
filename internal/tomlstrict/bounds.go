package tomlstrict

import (
	"bytes"
	"fmt"
)

// Bounds of a document: the decoder's cost grows with the square of the
// nesting depth (10,000 nested arrays took 156 MB), so a document is
// checked against them before it is decoded.
const (
	// MaxBytes bounds a document (a config file, an overlay, a flag).
	MaxBytes = 8 << 20
	// MaxDepth bounds the nesting of arrays and inline tables.
	MaxDepth = 64
)

// checkBounds returns an *Error naming the document (and the line, for
// the depth) when data is over MaxBytes or nests arrays and inline tables
// deeper than MaxDepth. It scans once, skipping strings and comments.
func checkBounds(data []byte, name string) error {
	if len(data) > MaxBytes {
		return &Error{Name: name, Msg: fmt.Sprintf("%d bytes, over the %d-byte limit of a TOML document", len(data), MaxBytes)}
	}
	line, depth := 1, 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			end := skipString(data, i)
			line += bytes.Count(data[i:end], []byte{'\n'})
			i = end - 1
		case '[', '{':
			if depth++; depth > MaxDepth {
				return &Error{Name: name, Line: line, Msg: fmt.Sprintf("arrays or inline tables nested deeper than %d levels", MaxDepth)}
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return nil
}

// skipString returns the offset after the string starting at data[i]
// (basic or literal, single- or multi-line); an unterminated string runs
// to the end (the decoder then reports it).
func skipString(data []byte, i int) int {
	q := data[i]
	delim := []byte{q}
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
		delim = []byte{q, q, q}
	}
	j := i + len(delim)
	for j < len(data) {
		if q == '"' && data[j] == '\\' {
			j += 2
			continue
		}
		if bytes.HasPrefix(data[j:], delim) {
			j += len(delim)
			for len(delim) == 3 && j < len(data) && data[j] == q { // """a"""" ends with the last three
				j++
			}
			return j
		}
		if len(delim) == 1 && data[j] == '\n' {
			return j // a single-line string ends at the line's end
		}
		j++
	}
	return len(data)
}
