package loader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// BenchDataset is the dataset `kestrel bench loader` reads: the prepared
// dataset at path, or, when path is "", SyntheticDataset(sources, tokens)
// for sequences of seqLen tokens. name labels the results (the path, or
// "synthetic").
func BenchDataset(path string, sources int, tokens int64, seqLen int) (ds *Dataset, name string, err error) {
	if path != "" {
		ds, _, err = Open(path)
		return ds, path, err
	}
	if sources < 1 || tokens < int64(seqLen)+1 {
		return nil, "", fmt.Errorf("bench loader: synthetic data needs --sources ≥ 1 and --tokens > --seq-len (%d)", seqLen)
	}
	return SyntheticDataset(sources, tokens), "synthetic", nil
}

// SyntheticDataset is in-memory data for benchmarks: sources sources
// ("src0", "src1", …) of tokens random tokens below 50257 each, in
// documents of 1..1000 tokens. It is the same for every call.
func SyntheticDataset(sources int, tokens int64) *Dataset {
	ds := &Dataset{Name: "synthetic"}
	r := rand.New(rand.NewPCG(1, 2))
	for s := 0; s < sources; s++ {
		m := &MemStream{Tokens: make([]int32, tokens)}
		for i := int64(0); i < tokens; {
			m.Starts = append(m.Starts, i)
			i += 1 + int64(r.IntN(1000))
		}
		for i := range m.Tokens {
			m.Tokens[i] = int32(r.IntN(50257))
		}
		ds.Sources = append(ds.Sources, Source{Name: fmt.Sprintf("src%d", s), Train: m})
	}
	return ds
}

// Bench ops: what a BenchResult measured.
const (
	BenchRefCopy   = "loader_ref_copy"   // sequential copy of the same tokens (the reference)
	BenchFill      = "loader"            // Fill of whole global batches, one permutation
	BenchPermIndex = "permutation_index" // the permutation's Index alone
)

// BenchResult is one measurement of Bench. Op says which fields are set:
// BenchRefCopy has the rates; BenchFill also Permutation, Packing, Batch,
// SeqLen and RatioToCopy; BenchPermIndex Permutation, NsPerIndex and
// Checksum (a value derived from the indices, so the loop is not optimised
// away).
type BenchResult struct {
	Op            string
	Permutation   string
	Packing       string
	Batch, SeqLen int
	BatchesPerSec float64
	TokensPerSec  float64
	RatioToCopy   float64 // TokensPerSec ÷ the reference copy's
	NsPerIndex    float64
	Checksum      int64
}

// BenchOptions configure Bench.
type BenchOptions struct {
	Steps, Batch, SeqLen int      // batches timed per measurement, sequences per batch, tokens per sequence
	Packing              string   // PackConcat or PackBOS
	Permutations         []string // PermFeistel, PermLCG …
	Seed                 uint64   // run seed
	// Emit receives each result; an error it returns stops Bench.
	Emit func(BenchResult) error
}

// Bench times the loader over ds without prefetching (the cost the
// prefetch goroutine hides from the trainer): first the reference, copying
// the same number of tokens sequentially out of the same streams; then Fill
// of opt.Steps whole global batches for each permutation (cfg with its
// permutation, packing and prefetch replaced; mix_block 0 becomes 1024);
// then each permutation's Index alone over 2,000,000 calls.
func Bench(ctx context.Context, ds *Dataset, cfg Config, opt BenchOptions) error {
	if opt.Steps < 1 || opt.Batch < 1 || opt.SeqLen < 1 || len(ds.Sources) == 0 {
		return fmt.Errorf("bench loader: need steps, batch, seq_len ≥ 1 and a source")
	}
	refSec, err := benchCopy(ds, opt.Steps, opt.Batch, opt.SeqLen)
	if err != nil {
		return err
	}
	tokens := float64(opt.Steps * opt.Batch * opt.SeqLen)
	refTok := tokens / refSec
	if err := opt.Emit(BenchResult{Op: BenchRefCopy, BatchesPerSec: float64(opt.Steps) / refSec, TokensPerSec: refTok}); err != nil {
		return err
	}
	for _, perm := range opt.Permutations {
		if err := ctx.Err(); err != nil {
			return err
		}
		sec, err := benchFill(ds, cfg, perm, opt)
		if err != nil {
			return fmt.Errorf("bench loader: %w", err)
		}
		tps := tokens / sec
		if err := opt.Emit(BenchResult{Op: BenchFill, Permutation: perm, Packing: opt.Packing, Batch: opt.Batch, SeqLen: opt.SeqLen,
			BatchesPerSec: float64(opt.Steps) / sec, TokensPerSec: tps, RatioToCopy: tps / refTok}); err != nil {
			return err
		}
	}
	for _, perm := range opt.Permutations {
		p, err := NewPermutation(PermSpec{Kind: perm}, 1_000_003, 42)
		if err != nil {
			return fmt.Errorf("bench loader: %w", err)
		}
		const n = 2_000_000
		var sink int64
		start := time.Now()
		for i := int64(0); i < n; i++ {
			sink += p.Index(i % 1_000_003)
		}
		ns := float64(time.Since(start).Nanoseconds()) / n
		if err := opt.Emit(BenchResult{Op: BenchPermIndex, Permutation: perm, NsPerIndex: ns, Checksum: sink % 1000}); err != nil {
			return err
		}
	}
	return nil
}

// benchFill times opt.Steps calls of Fill with one permutation.
func benchFill(ds *Dataset, cfg Config, perm string, opt BenchOptions) (float64, error) {
	cfg.Permutation, cfg.Packing, cfg.Prefetch = perm, opt.Packing, 0
	if cfg.MixBlock == 0 {
		cfg.MixBlock = 1024
	}
	l, err := New(ds, cfg, Options{SeqLen: opt.SeqLen, Seed: opt.Seed, Schedule: ConstantBatch(opt.Batch)})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	n := opt.Batch * opt.SeqLen
	in, tg, sg := make([]int32, n), make([]int32, n), make([]int32, n)
	src := make([]int, opt.Batch)
	start := time.Now()
	for s := 0; s < opt.Steps; s++ {
		if err := l.Fill(s, opt.Batch, 0, opt.Batch, in, tg, sg, src); err != nil {
			return 0, err
		}
	}
	return time.Since(start).Seconds(), nil
}

// benchCopy times reading the same number of tokens as steps batches
// sequentially from the sources' train streams.
func benchCopy(ds *Dataset, steps, batch, seqLen int) (float64, error) {
	buf := make([]int32, seqLen+1)
	off := make([]int64, len(ds.Sources))
	start := time.Now()
	for st := 0; st < steps; st++ {
		for r := 0; r < batch; r++ {
			s := r % len(ds.Sources)
			tr := ds.Sources[s].Train
			if off[s]+int64(seqLen)+1 > tr.Len() {
				off[s] = 0
			}
			if err := tr.ReadAt(buf, off[s]); err != nil {
				return 0, fmt.Errorf("bench loader: reference copy: %w", err)
			}
			off[s] += int64(seqLen)
		}
	}
	return time.Since(start).Seconds(), nil
}
