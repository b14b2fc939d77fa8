package tomlstrict

import (
	"errors"
	"strings"
	"testing"
)

type inner struct {
	MinWords int     `toml:"min_words"`
	Frac     float64 `toml:"frac"`
}

type doc struct {
	Name  string `toml:"name"`
	Inner inner  `toml:"inner"`
}

// TestDecodeErrorsNameFileAndLine: an unknown key, a type error and a
// syntax error each name the file and the line they are on.
func TestDecodeErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string // substrings of the error
	}{
		{"unknown key", "name = \"a\"\n\n[inner]\nmin_wordz = 3\n", []string{`cfg.toml:4: unknown key "inner.min_wordz"`}},
		{"two unknown keys", "nam = \"a\"\n[inner]\nfrak = 1.0\n", []string{`cfg.toml:1: unknown key "nam"`, `cfg.toml:3: unknown key "inner.frak"`}},
		{"type error", "name = \"a\"\n[inner]\nfrac = 0.5\nmin_words = \"many\"\n", []string{`cfg.toml:4: key "inner.min_words": `, "string", "int"}},
		{"syntax error", "name = \"a\"\n[inner\n", []string{"cfg.toml:2: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			err := Decode([]byte(tc.data), "cfg.toml", &d)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
			var te *Error
			if !errors.As(err, &te) || te.Name != "cfg.toml" || te.Line < 1 {
				t.Fatalf("error %#v: want an *Error with name and line", err)
			}
		})
	}
	var d doc
	if err := Decode([]byte("name = \"a\"\n[inner]\nmin_words = 3\n"), "cfg.toml", &d); err != nil || d.Inner.MinWords != 3 || d.Name != "a" {
		t.Fatalf("valid document: %v, %+v", err, d)
	}
}

func TestDecodeFiltered(t *testing.T) {
	var d struct {
		Inner inner `toml:"inner"`
	}
	data := []byte("name = \"ignored\"\n[inner]\nmin_wordz = 1\n")
	err := DecodeFiltered(data, "f.toml", &d, func(key []string) bool { return key[0] == "inner" })
	if err == nil || err.Error() != `f.toml:3: unknown key "inner.min_wordz"` {
		t.Fatalf("err = %v", err)
	}
	if err := DecodeFiltered(data[:len("name = \"ignored\"\n")], "f.toml", &d, func([]string) bool { return false }); err != nil {
		t.Fatalf("filtered key reported: %v", err)
	}
}

func TestOverlay(t *testing.T) {
	dst := inner{MinWords: 50, Frac: 0.1}
	if err := Overlay(map[string]any{"min_words": int64(20)}, "filters", &dst); err != nil || dst.MinWords != 20 || dst.Frac != 0.1 {
		t.Fatalf("overlay: %v, %+v", err, dst)
	}
	for raw, want := range map[string]map[string]any{
		`filters: unknown key "min_wordz"`: {"min_wordz": int64(1)},
		`filters: key "frac": `:            {"frac": "x"},
	} {
		if err := Overlay(want, "filters", &dst); err == nil || !strings.HasPrefix(err.Error(), raw) {
			t.Fatalf("err = %v, want prefix %q", err, raw)
		}
	}
}
