package run

import (
	"testing"

	"github.com/kestrel-lm/kestrel/internal/rewind"
)

// FuzzParseStepRange: any text either parses to a window within
// 1 ≤ A ≤ B ≤ rewind.MaxSkipStep or is refused, never anything else.
func FuzzParseStepRange(f *testing.F) {
	for _, s := range []string{"", "61:70", "5", "31:9223372036854775807", "0:3", "70:61", "a:b", " 3 : 4 ", "-1:2", "2147483647"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		from, to, err := ParseStepRange("--skip-steps", s)
		switch {
		case err != nil:
			if from != 0 || to != 0 {
				t.Fatalf("%q: refused but returned %d:%d", s, from, to)
			}
		case s == "":
			if from != 0 || to != 0 {
				t.Fatalf("empty: %d:%d", from, to)
			}
		case from < 1 || to < from || to > rewind.MaxSkipStep:
			t.Fatalf("%q: accepted %d:%d", s, from, to)
		}
	})
}
