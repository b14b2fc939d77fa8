package flagx

import (
	"errors"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/rewind"
)

func TestStepRange(t *testing.T) {
	for _, c := range []struct {
		s        string
		from, to int
		ok       bool
	}{
		{"", 0, 0, true}, {"61:70", 61, 70, true}, {"5", 5, 5, true}, {" 3 : 4 ", 3, 4, true},
		{"70:61", 0, 0, false}, {"0:3", 0, 0, false}, {"a:b", 0, 0, false}, {"3:", 0, 0, false}, {"-1:2", 0, 0, false},
		{"31:9223372036854775807", 0, 0, false},
	} {
		from, to, err := StepRange("--skip-steps", c.s)
		if (err == nil) != c.ok || from != c.from || to != c.to {
			t.Errorf("%q: %d:%d, %v; want %d:%d ok %v", c.s, from, to, err, c.from, c.to, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--skip-steps") {
			t.Errorf("%q: error %q does not name the flag", c.s, err)
		}
	}
}

// FuzzStepRange: any text either parses to a window within
// 1 ≤ A ≤ B ≤ rewind.MaxSkipStep or is refused, never anything else.
func FuzzStepRange(f *testing.F) {
	for _, s := range []string{"", "61:70", "5", "31:9223372036854775807", "0:3", "70:61", "a:b", " 3 : 4 ", "-1:2", "2147483647"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		from, to, err := StepRange("--skip-steps", s)
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

// TestEndRank: a single process closes its group and returns the
// training error as it is (a hang in a group of one aborts nothing).
func TestEndRank(t *testing.T) {
	var stderr strings.Builder
	trainErr := errors.New("train: boom")
	if err := EndRank(comm.Single(), trainErr, &stderr); err != trainErr || stderr.Len() != 0 {
		t.Errorf("EndRank = %v (stderr %q); want the training error back, nothing printed", err, stderr.String())
	}
	if err := EndRank(comm.Single(), nil, &stderr); err != nil {
		t.Errorf("EndRank after success = %v", err)
	}
}

// TestHeldout: NAME=PATH, the path keeping any '=' and its
// ${KESTREL_DATA} resolved; a missing '=', an empty or bad name and an
// empty path are refused naming the flag.
func TestHeldout(t *testing.T) {
	data := t.TempDir()
	t.Setenv("KESTREL_DATA", data)
	for _, tc := range []struct {
		in, name, path, err string
	}{
		{"legal=/data/legal.txt", "legal", "/data/legal.txt", ""},
		{"code.v2=${KESTREL_DATA}/a=b.txt", "code.v2", data + "/a=b.txt", ""},
		{"/data/legal.txt", "", "", "want NAME=PATH"},
		{"=/data/legal.txt", "", "", "name: empty"},
		{"a b=/x", "", "", `name = "a b"`},
		{"legal=", "", "", "path: empty"},
	} {
		h, err := Heldout(tc.in)
		switch {
		case tc.err == "" && (err != nil || h.Name != tc.name || h.Path != tc.path):
			t.Errorf("%q: %+v, %v", tc.in, h, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--heldout")):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

func FuzzHeldout(f *testing.F) {
	for _, s := range []string{"legal=/data/legal.txt", "=", "a=b=c", "é=x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Heldout(s)
		if err == nil && (h.Name == "" || h.Path == "" || h.Name+"="+h.Path != s) {
			t.Fatalf("%q accepted as %+v", s, h)
		}
	})
}
