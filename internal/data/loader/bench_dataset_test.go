package loader

import (
	"strings"
	"testing"
)

// TestBenchDataset: synthetic data when no path is given, an error naming
// the flags for impossible synthetic sizes, and the path's own error for a
// dataset that does not open.
func TestBenchDataset(t *testing.T) {
	cases := []struct {
		path            string
		sources         int
		tokens          int64
		seqLen          int
		wantName, wantE string
	}{
		{"", 2, 1000, 64, "synthetic", ""},
		{"", 0, 1000, 64, "", "--sources"},
		{"", 2, 64, 64, "", "--tokens > --seq-len (64)"},
		{t.TempDir() + "/missing", 2, 1000, 64, "", "missing"},
	}
	for _, c := range cases {
		ds, name, err := BenchDataset(c.path, c.sources, c.tokens, c.seqLen)
		if c.wantE != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantE) {
				t.Errorf("%+v: err %v, want one containing %q", c, err, c.wantE)
			}
			continue
		}
		if err != nil || name != c.wantName || len(ds.Sources) != c.sources {
			t.Errorf("%+v: %q, %d sources, %v", c, name, len(ds.Sources), err)
		}
	}
}
