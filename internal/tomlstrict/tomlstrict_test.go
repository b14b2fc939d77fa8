package tomlstrict

import (
	"errors"
	"fmt"
	"math"
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

// TestDecodeRefusesNonFinite: every nan or inf float literal, wherever it
// is, is an *Error naming the key (with array indices) and the line; the
// same numbers written finitely decode.
func TestDecodeRefusesNonFinite(t *testing.T) {
	type src struct {
		Weight  float64            `toml:"weight"`
		Weights map[string]float64 `toml:"weights"`
	}
	type target struct {
		X    float64            `toml:"x"`
		Y    float32            `toml:"y"`
		List []float64          `toml:"list"`
		Map  map[string]float64 `toml:"map"`
		Any  map[string]any     `toml:"any"`
		Srcs []src              `toml:"srcs"`
		Sec  struct {
			Z   float64 `toml:"z"`
			Sub struct {
				W float64 `toml:"w"`
			} `toml:"sub"`
		} `toml:"sec"`
	}
	for _, tc := range []struct {
		name, data, key string
		line            int
	}{
		{"nan", "x = nan\n", "x", 1},
		{"+nan", "x = +nan\n", "x", 1},
		{"-nan", "x = -nan\n", "x", 1},
		{"inf", "\nx = inf\n", "x", 2},
		{"+inf", "x = +inf\n", "x", 1},
		{"-inf", "x = -inf\n", "x", 1},
		{"float32", "y = nan\n", "y", 1},
		{"table", "x = 1.0\n[sec]\nz = inf\n", "sec.z", 3},
		{"dotted key", "sec.sub.w = nan\n", "sec.sub.w", 1},
		{"subtable", "[sec.sub]\nw = -inf\n", "sec.sub.w", 2},
		{"array", "list = [1.0,\n  2.0, nan]\n", "list[2]", 2},
		{"map", "map = { a = 1.0, b = inf }\n", "map.b", 1},
		{"map table", "[map]\na = 1.0\nb = nan\n", "map.b", 3},
		{"interface map", "any = { deep = { v = [nan] } }\n", "any.deep.v[0]", 1},
		{"array of tables", "[[srcs]]\nweight = 1.0\n[[srcs]]\nweight = nan\n", "srcs[1].weight", 4},
		{"array of tables, map", "[[srcs]]\nweight = 1.0\nweights = { a = 0.5, b = -inf }\n", "srcs[0].weights.b", 3},
		{"array of tables, subtable", "[[srcs]]\n[[srcs]]\n[srcs.weights]\na = inf\n", "srcs[1].weights.a", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v target
			err := Decode([]byte(tc.data), "cfg.toml", &v)
			var te *Error
			if !errors.As(err, &te) || !te.IsNonFinite() {
				t.Fatalf("err = %v, want a non-finite *Error", err)
			}
			if te.Key != tc.key || te.Line != tc.line || te.Name != "cfg.toml" {
				t.Fatalf("error names key %q line %d file %q, want %q line %d: %v", te.Key, te.Line, te.Name, tc.key, tc.line, err)
			}
			if want := fmt.Sprintf("cfg.toml:%d: key %q: not a finite number", tc.line, tc.key); !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %q, want prefix %q", err, want)
			}
		})
	}
	var v target
	ok := "x = 1e300\ny = -2.5e-3\nlist = [0.0, -0.0, 1_000.5]\nmap = { a = 1e-300 }\n[[srcs]]\nweight = 3.0\n"
	if err := Decode([]byte(ok), "cfg.toml", &v); err != nil || v.X != 1e300 || v.Srcs[0].Weight != 3 {
		t.Fatalf("finite document: %v, %+v", err, v)
	}
	if err := Decode([]byte("x = nan\ny = inf\n"), "cfg.toml", &v); err == nil || strings.Count(err.Error(), "not a finite number") != 2 {
		t.Fatalf("two non-finite values: want both named, got %v", err)
	}
	// an overlay (a map rendered to TOML) is checked too
	if err := Overlay(map[string]any{"frac": math.NaN()}, "filters", &inner{}); err == nil || !strings.Contains(err.Error(), `filters: key "frac": not a finite number`) {
		t.Fatalf("overlay with NaN: %v", err)
	}
}
