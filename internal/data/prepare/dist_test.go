package prepare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
)

// runLocal runs RunDist on n in-process ranks; opt(r) adjusts rank r's
// options.
func runLocal(t *testing.T, n int, cfg Config, out string, opt func(r int, o *DistOptions)) ([]*datareport.Report, []error) {
	t.Helper()
	cs := comm.Local(n)
	reps := make([]*datareport.Report, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := DistOptions{RunOptions: RunOptions{Out: out}, Comm: c, UnitBytes: 48 << 10}
			if opt != nil {
				opt(r, &o)
			}
			reps[r], errs[r] = RunDist(context.Background(), cfg, o)
		}()
	}
	wg.Wait()
	return reps, errs
}

func distConfig(t *testing.T) Config {
	fx := writeFixture(t)
	cfg := testConfig(fx)
	cfg.Tokenizer.Mode = "train"
	cfg.Tokenizer.VocabSize = 300
	cfg.Tokenizer.TrainMaxBytes = 200 << 10
	cfg.Tokenizer.Shards.ValFraction = 0.1
	cfg.ShardBytes = 100 << 10 // several document shards per source
	// Pages in ten languages under the web set: language ID runs on every rank.
	cfg.Sources = append(cfg.Sources, Source{Name: "intl", Inputs: []string{"../clean/testdata/langid/labelled.jsonl"}, Format: "jsonl", Filter: "web"})
	return cfg
}

// TestDistMatchesSingle: 2 and 3 in-process ranks, with large JSONL
// files cut into 48 KiB byte ranges, give the dataset one process gives.
func TestDistMatchesSingle(t *testing.T) {
	cfg := distConfig(t)
	single := filepath.Join(t.TempDir(), "single")
	ref, err := Run(context.Background(), cfg, RunOptions{Out: single})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Rejects[datareport.StageExact+"/exact_duplicate"] == 0 || ref.Rejects[datareport.StageNear+"/minhash"] == 0 || ref.Rejects[datareport.StageDecontam+"/gsm8k"] == 0 {
		t.Fatalf("fixture lacks a duplicate or contamination: %v", ref.Rejects)
	}
	if ref.Rejects["clean/langid/de"] != 6 || ref.Rejects["clean/langid/pl"] != 4 {
		t.Fatalf("language-ID rejects %v: want 6 German and 4 Polish pages", ref.Rejects)
	}
	for _, n := range []int{2, 3} {
		out := filepath.Join(t.TempDir(), "dist")
		reps, errs := runLocal(t, n, cfg, out, nil)
		for r, err := range errs {
			if err != nil {
				t.Fatalf("%d ranks: rank %d: %v", n, r, err)
			}
		}
		d := reps[0].Dist
		if d == nil || d.Ranks != n || len(d.PerRank) != n {
			t.Fatalf("%d ranks: dist report %+v", n, d)
		}
		if n > 1 && d.Units <= len(cfg.Sources) {
			t.Errorf("%d ranks: only %d units: nothing was split", n, d.Units)
		}
		// Units go to the ranks that claim them first (a rank may get
		// none); every rank owns a part of the hashes.
		units := 0
		for _, pr := range d.PerRank {
			units += pr.Units
			if pr.ExactIndexBytes == 0 {
				t.Errorf("%d ranks: rank %d holds no exact-dedup hashes: %+v", n, pr.Rank, pr)
			}
		}
		if units != d.Units {
			t.Errorf("%d ranks: the ranks read %d units of %d", n, units, d.Units)
		}
		diffs, err := Diff(single, out)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range diffs {
			t.Errorf("%d ranks: %s", n, s)
		}
		if _, err := os.Stat(WorkDirFor(out)); !os.IsNotExist(err) {
			t.Errorf("%d ranks: work directory left after success: %v", n, err)
		}
	}
}

// TestDiffFindsDifferences: the checker is not blind.
func TestDiffFindsDifferences(t *testing.T) {
	cfg := distConfig(t)
	cfg.Tokenizer.Mode = "none"
	a := filepath.Join(t.TempDir(), "a")
	if _, err := Run(context.Background(), cfg, RunOptions{Out: a}); err != nil {
		t.Fatal(err)
	}
	cfg.Dedup.Exact = false
	b := filepath.Join(t.TempDir(), "b")
	if _, err := Run(context.Background(), cfg, RunOptions{Out: b}); err != nil {
		t.Fatal(err)
	}
	diffs, err := Diff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var rejects, kept bool
	for _, s := range diffs {
		rejects = rejects || strings.HasPrefix(s, "reject ")
		kept = kept || strings.Contains(s, "kept document")
	}
	if !rejects || !kept {
		t.Errorf("diff of datasets with and without exact dedup misses rejects (%v) or kept documents (%v): %q", rejects, kept, diffs)
	}
}

// TestDistRankFailureAndResume: a rank that fails stops every rank with an
// error naming it; the rerun reuses the units finished before and still
// gives the single-process dataset.
func TestDistRankFailureAndResume(t *testing.T) {
	cfg := distConfig(t)
	cfg.Tokenizer.Mode = "none"
	single := filepath.Join(t.TempDir(), "single")
	if _, err := Run(context.Background(), cfg, RunOptions{Out: single}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dist")
	// Rank 0 starts claiming units once rank 1 has failed, so that rank 1
	// reads its 40 documents (and rank 0 the rest).
	failed := make(chan struct{})
	_, errs := runLocal(t, 2, cfg, out, func(r int, o *DistOptions) {
		if r == 1 {
			o.StopAfter = 40
			o.hooks = &distHooks{afterClaims: func() { close(failed) }}
		} else {
			o.hooks = &distHooks{beforeClaims: func() { <-failed }}
		}
	})
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "StopAfter") {
		t.Fatalf("rank 1: %v, want its StopAfter error", errs[1])
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank 1 failed") {
		t.Fatalf("rank 0: %v, want an error naming rank 1", errs[0])
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed run left %s: %v", out, err)
	}
	reps, errs := runLocal(t, 2, cfg, out, nil)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rerun: rank %d: %v", r, err)
		}
	}
	reused := 0
	for _, pr := range reps[0].Dist.PerRank {
		reused += pr.UnitsReused
	}
	if reused == 0 {
		t.Errorf("rerun reused no finished unit: %+v", reps[0].Dist.PerRank)
	}
	diffs, err := Diff(single, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range diffs {
		t.Errorf("rerun: %s", s)
	}
}

// TestDistRefusesVerify: verified near dedup cannot be partitioned.
func TestDistRefusesVerify(t *testing.T) {
	cfg := distConfig(t)
	cfg.Dedup.MinHash.Verify = true
	_, errs := runLocal(t, 2, cfg, filepath.Join(t.TempDir(), "ds"), nil)
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "verify") {
			t.Errorf("rank %d: %v, want the verify error", r, err)
		}
	}
}

// TestDistWARCRanges: a .warc.gz cut into member ranges over 2 ranks gives
// the single-process dataset.
func TestDistWARCRanges(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workers = 2
	cfg.Sources = []Source{{Name: "web", Inputs: []string{"${KESTREL_DATA}/dolma-testdata/warc/sample-0000.warc.gz"}, Format: "warc", Filter: "web"}}
	cfg.Decontam.Enabled = false
	single := filepath.Join(t.TempDir(), "single")
	ref, err := Run(context.Background(), cfg, RunOptions{Out: single})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Kept.Docs == 0 {
		t.Fatal("nothing kept from the WARC sample")
	}
	out := filepath.Join(t.TempDir(), "dist")
	reps, errs := runLocal(t, 2, cfg, out, nil)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if reps[0].Dist.Units < 3 {
		t.Errorf("%d units: the WARC file was not cut", reps[0].Dist.Units)
	}
	diffs, err := Diff(single, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range diffs {
		t.Error(s)
	}
}

// TestDistDeadRank: a rank that never takes part (a dead process) makes
// the others stop with an error naming it once the timeout expires.
func TestDistDeadRank(t *testing.T) {
	cfg := distConfig(t)
	cfg.Tokenizer.Mode = "none"
	out := filepath.Join(t.TempDir(), "dist")
	cs := comm.Local(3)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 { // rank 2 never calls RunDist
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[r] = RunDist(context.Background(), cfg, DistOptions{RunOptions: RunOptions{Out: out}, Comm: cs[r], Timeout: 300 * time.Millisecond})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "never reached by rank 2") {
			t.Errorf("rank %d: %v, want an error naming rank 2", r, err)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run with a dead rank left %s: %v", out, err)
	}
}

// TestDistDecontamIndexesMustAgree: every rank builds the decontamination
// index from its own copy of the eval files; a rank whose copy differs
// (half of its eval items) stops every rank with an error naming it, and
// nothing is installed.
func TestDistDecontamIndexesMustAgree(t *testing.T) {
	cfg := distConfig(t)
	cfg.Tokenizer.Mode = "none"
	rc, err := resolved(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := rc.Decontam.Index.EvalSets[0].Paths[0]
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), filepath.Base(src))
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(other, []byte(strings.Join(lines[:len(lines)/2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dist")
	_, errs := runLocal(t, 2, cfg, out, func(r int, o *DistOptions) {
		if r == 1 {
			o.hooks = &distHooks{decontam: func(c decontam.Config) decontam.Config {
				sets := slices.Clone(c.EvalSets)
				sets[0].Paths = append([]string{other}, sets[0].Paths[1:]...)
				c.EvalSets = sets
				return c
			}}
		}
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 1 on") || !strings.Contains(err.Error(), "different decontamination index") {
			t.Errorf("rank %d: %v, want the index mismatch naming rank 1", r, err)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed run left %s: %v", out, err)
	}
}
