package loader

import (
	"context"
	"errors"
	"testing"
)

// TestBench runs the loader benchmark on small synthetic data: the
// reference copy first, then one Fill and one Index result per
// permutation, with positive rates; an Emit error stops it.
func TestBench(t *testing.T) {
	ds := SyntheticDataset(2, 5000)
	if len(ds.Sources) != 2 || ds.Sources[1].Name != "src1" || ds.Sources[0].Train.Len() != 5000 {
		t.Fatalf("synthetic dataset: %+v", ds.Sources)
	}
	var got []BenchResult
	opt := BenchOptions{Steps: 3, Batch: 2, SeqLen: 16, Packing: PackConcat, Permutations: []string{PermFeistel, PermLCG}, Seed: 1,
		Emit: func(r BenchResult) error { got = append(got, r); return nil }}
	if err := Bench(context.Background(), ds, testConfig(), opt); err != nil {
		t.Fatal(err)
	}
	wantOps := []string{BenchRefCopy, BenchFill, BenchFill, BenchPermIndex, BenchPermIndex}
	if len(got) != len(wantOps) {
		t.Fatalf("%d results, want %d: %+v", len(got), len(wantOps), got)
	}
	for i, r := range got {
		if r.Op != wantOps[i] {
			t.Errorf("result %d: op %q, want %q", i, r.Op, wantOps[i])
		}
		switch r.Op {
		case BenchFill:
			if !(r.TokensPerSec > 0) || !(r.RatioToCopy > 0) || r.Batch != 2 || r.SeqLen != 16 || r.Packing != PackConcat {
				t.Errorf("result %d: %+v", i, r)
			}
		case BenchPermIndex:
			if !(r.NsPerIndex > 0) || r.Permutation == "" {
				t.Errorf("result %d: %+v", i, r)
			}
		}
	}
	stop := errors.New("stop")
	if err := Bench(context.Background(), ds, testConfig(), BenchOptions{Steps: 1, Batch: 1, SeqLen: 8, Packing: PackConcat,
		Permutations: []string{PermFeistel}, Emit: func(BenchResult) error { return stop }}); err != stop {
		t.Errorf("emit error: got %v", err)
	}
}
