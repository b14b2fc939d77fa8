package shufflereport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

// TestRunSynthetic: on topic-sorted synthetic data the Feistel permutation
// gives near-i.i.d. batches while an LCG with stride 3 drifts in phases;
// Plot writes a PNG and a failed Plot leaves an existing file alone.
func TestRunSynthetic(t *testing.T) {
	opt := Options{Permutations: []string{"feistel", " lcg"}, Steps: 300, Batch: 32, Blocks: 16, Lags: 20, LCGStride: 3,
		Items: 50000, Data: loader.DefaultConfig(), RunSeed: 1}
	comps, labels, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 2 || len(labels) != 16 || labels[3] != "block 3" {
		t.Fatalf("%d compositions, labels %v", len(comps), labels)
	}
	if f, l := comps[0], comps[1]; MaxAbsACF(f) > 0.3 || l.Lag1() < 0.9 || l.MaxRun < 20 || l.Label != "lcg stride 3" {
		t.Fatalf("feistel max|acf| %.3f, lcg lag1 %.3f max_run %d label %q", MaxAbsACF(f), l.Lag1(), l.MaxRun, l.Label)
	}
	// The table and JSON kestrel data shuffle-report prints of comps:
	// cmd/kestrel/internal/show.
	png := filepath.Join(t.TempDir(), "r.png")
	if err := Plot(png, comps, labels); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("plot: %v", err)
	}
	if err := Plot(filepath.Join(png, "sub.png"), comps, labels); err == nil {
		t.Fatal("plot into a file's path accepted")
	}

	for _, bad := range []Options{
		{Permutations: []string{"shuffle"}, Steps: 10, Batch: 1, Blocks: 1, Lags: 1, Items: 100},
		{Permutations: []string{"feistel"}, Steps: 1, Batch: 1, Blocks: 1, Lags: 1, Items: 100},
	} {
		if _, _, err := Run(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
