// Package tomlstrict is kestrel's one strict TOML decoder: a key the
// target does not have is an error, a float that is not finite (TOML's
// nan, inf, +inf, -inf) is an error, and every error names the file (or
// flag) and the line. internal/config decodes config files and
// --section.key=value overrides with it; prepare applies its per-source
// filter overlays with it. It imports nothing of the project.
package tomlstrict

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Error is one problem in a TOML document.
type Error struct {
	Name string // the file, flag or table the document came from
	Line int    // 1-based line in it; 0 when the document has no lines of its own (an overlay)
	Key  string // dotted key, when known
	In   string // the table the key is in, when Key alone does not say (optional)
	Msg  string // what is wrong, e.g. "unknown key" or a type mismatch
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	switch {
	case e.Msg == msgUnknown:
		fmt.Fprintf(&b, "unknown key %q", e.Key)
		if e.In != "" {
			fmt.Fprintf(&b, " in %s", e.In)
		}
	case e.Key != "":
		fmt.Fprintf(&b, "key %q: %s", e.Key, e.Msg)
	default:
		b.WriteString(e.Msg)
	}
	return b.String()
}

const msgUnknown = "unknown key"

// msgNonFinite is the message of a nan or inf literal.
const msgNonFinite = "not a finite number (nan and inf are refused)"

// IsUnknownKey reports whether e is about a key the target lacks.
func (e *Error) IsUnknownKey() bool { return e.Msg == msgUnknown }

// IsNonFinite reports whether e is about a nan or inf float literal.
func (e *Error) IsNonFinite() bool { return e.Msg == msgNonFinite }

// Decode strictly decodes TOML data into v, on top of what v holds. name
// labels the errors (a file path, or a flag). An unknown key is an *Error
// naming the key and its line (several unknown keys are joined, one per
// line); a value of the wrong type or a syntax error names the line too.
// A float literal that is not finite (nan, inf, with or without a sign) is
// an *Error naming its key and line, wherever it is (a table, an array, an
// inline table, an array of tables): no setting of kestrel means anything
// with NaN or ±Inf, and NaN silently fails every range check.
func Decode(data []byte, name string, v any) error {
	return DecodeFiltered(data, name, v, nil)
}

// DecodeFiltered is Decode that ignores the unknown keys for which report
// returns false (report nil: none are ignored). It lets a caller check one
// part of a document against a narrower type than the one it was decoded
// into. A document over MaxBytes, or nesting arrays and inline tables
// deeper than MaxDepth, is an *Error naming it (and the line).
func DecodeFiltered(data []byte, name string, v any, report func(key []string) bool) error {
	if err := checkBounds(data, name); err != nil {
		return err
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nonFinite(data, name)
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var errs []error
		for _, e := range strict.Errors {
			if report != nil && !report(e.Key()) {
				continue
			}
			row, _ := e.Position()
			errs = append(errs, &Error{Name: name, Line: row, Key: strings.Join(e.Key(), "."), Msg: msgUnknown})
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return &Error{Name: name, Line: row, Key: strings.Join(de.Key(), "."), Msg: strings.TrimPrefix(de.Error(), "toml: ")}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Overlay strictly decodes raw, a TOML table already decoded into a map
// (such as prepare's per-source filters), onto dst. name labels the
// errors (e.g. `source "web": filters`); since raw has no lines of its
// own, they name the key instead.
func Overlay(raw map[string]any, name string, dst any) error {
	if len(raw) == 0 {
		return nil
	}
	b, err := toml.Marshal(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	err = Decode(b, name, dst)
	return dropLines(err)
}

// dropLines clears the line of every *Error in err (lines of a document
// rendered from a map mean nothing to the user).
func dropLines(err error) error {
	Each(err, func(e *Error) { e.Line = 0 })
	return err
}

// Each calls f for every *Error in err, a single one or several joined
// (as Decode returns them), so a caller can add context such as In.
func Each(err error, f func(*Error)) {
	if err == nil {
		return
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	for _, e := range list {
		var te *Error
		if errors.As(e, &te) {
			f(te)
		}
	}
}

// nonFinite returns an *Error for every nan or inf float literal of the
// (already decoded, so well-formed) document data, joined, naming the key
// as a dotted path with array indices (data.sources[1].weight,
// optim.multistep_factors[0]) and the line.
func nonFinite(data []byte, name string) error {
	var errs []error
	var p unstable.Parser
	p.Reset(data)
	prefix := ""               // the current table, resolved with indices
	arrays := map[string]int{} // elements seen of each array of tables (plain path)
	var check func(n *unstable.Node, key string)
	check = func(n *unstable.Node, key string) {
		switch n.Kind {
		case unstable.Float:
			if isNonFiniteLiteral(n.Data) {
				line := p.Shape(n.Raw).Start.Line
				errs = append(errs, &Error{Name: name, Line: line, Key: key, Msg: msgNonFinite})
			}
		case unstable.Array:
			it := n.Children()
			for i := 0; it.Next(); i++ {
				check(it.Node(), fmt.Sprintf("%s[%d]", key, i))
			}
		case unstable.InlineTable:
			it := n.Children()
			for it.Next() {
				kv := it.Node()
				check(kv.Value(), join(key, keyOf(kv)))
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts := keyParts(e)
			plain := strings.Join(parts, ".")
			if e.Kind == unstable.ArrayTable {
				arrays[plain]++
				for k := range arrays { // a new element restarts its nested arrays
					if strings.HasPrefix(k, plain+".") {
						delete(arrays, k)
					}
				}
			}
			prefix = ""
			for i := range parts {
				prefix = join(prefix, parts[i])
				if n := arrays[strings.Join(parts[:i+1], ".")]; n > 0 {
					prefix += fmt.Sprintf("[%d]", n-1)
				}
			}
		case unstable.KeyValue:
			check(e.Value(), join(prefix, keyOf(e)))
		}
	}
	if err := p.Error(); err != nil && len(errs) == 0 {
		return fmt.Errorf("%s: %w", name, err) // not reached: data decoded
	}
	return errors.Join(errs...)
}

// isNonFiniteLiteral reports whether a TOML float literal is nan or inf
// (a finite float is made of digits, '.', 'e', '_' and signs only).
func isNonFiniteLiteral(lit []byte) bool {
	s := strings.TrimLeft(string(lit), "+-")
	return s == "nan" || s == "inf"
}

// keyParts returns the parts of a dotted key of a table header or key-value.
func keyParts(n *unstable.Node) []string {
	var parts []string
	it := n.Key()
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// keyOf is the dotted key of a key-value node.
func keyOf(n *unstable.Node) string { return strings.Join(keyParts(n), ".") }

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
