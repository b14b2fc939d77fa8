package rewind

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRewindChecksSetFirst: --set flags go through CheckSet (with the run
// directory and the flags) before anything in the run changes; without a
// checker they are refused; a refused check is the error, wrapped.
func TestRewindChecksSetFirst(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"optim.lr=abc"}
	bad := errors.New("optim.lr: not a number")
	var gotDir string
	var gotFlags []string
	for _, tc := range []struct {
		name  string
		check func(string, []string) (map[string]string, error)
		want  string
	}{
		{"no checker", nil, "no checker of the run's config"},
		{"refused", func(d string, f []string) (map[string]string, error) { gotDir, gotFlags = d, f; return nil, bad }, "rewind: optim.lr: not a number"},
	} {
		_, err := Rewind(dir, Options{To: "last", SetFlags: flags, CheckSet: tc.check})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if gotDir != dir || !slices.Equal(gotFlags, flags) {
		t.Errorf("CheckSet got %q %v", gotDir, gotFlags)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("the run directory changed: %v", es)
	}
}
