package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

func newBenchLoaderCmd() *cobra.Command {
	var (
		dataset     string
		steps       int
		batch       int
		seqLen      int
		sources     int
		tokens      int64
		packing     string
		asJSON      bool
		permsToTest = []string{loader.PermFeistel, loader.PermLCG}
	)
	cmd := &cobra.Command{
		Use:   "loader [--dataset D] [--json]",
		Short: "loader batches/s and tokens/s (synthetic or prepared dataset), against a plain copy of the same tokens",
		Long: `Times Fill of whole global batches without prefetching (the cost the
prefetch goroutine hides from the trainer) for each permutation, and as a
reference in the same run, copying the same number of tokens sequentially
out of the same streams. Prints one JSON object per measurement with --json:
{"op":"loader","batches_per_sec":…,"tokens_per_sec":…}.`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML) for --dataset mode")
	f := cmd.Flags()
	f.StringVar(&dataset, "dataset", "", "prepared dataset directory (default: synthetic in-memory data)")
	f.IntVar(&steps, "steps", 300, "batches to time per measurement")
	f.IntVar(&batch, "batch", 32, "sequences per batch")
	f.IntVar(&seqLen, "seq-len", 512, "tokens per sequence")
	f.IntVar(&sources, "sources", 3, "synthetic: number of sources")
	f.Int64Var(&tokens, "tokens", 4_000_000, "synthetic: tokens per source")
	f.StringVar(&packing, "packing", loader.PackConcat, "concat | bos")
	f.BoolVar(&asJSON, "json", false, "print JSON lines")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		if steps < 1 || batch < 1 || seqLen < 1 || sources < 1 || tokens < int64(seqLen)+1 {
			return fmt.Errorf("bench loader: need --steps, --batch, --seq-len, --sources ≥ 1 and --tokens > --seq-len")
		}
		var ds *loader.Dataset
		name := "synthetic"
		if dataset != "" {
			if ds, err = openDataset(dataset); err != nil {
				return err
			}
			name = dataset
		} else {
			ds = benchDataset(sources, tokens)
		}
		w := cmd.OutOrStdout()
		emit := func(m map[string]any) error {
			m["dataset"] = name
			if asJSON {
				return json.NewEncoder(w).Encode(m)
			}
			_, err := fmt.Fprintln(w, benchLine(m))
			return err
		}
		// reference: sequential copy of the same token count
		refSec, err := benchCopy(ds, steps, batch, seqLen)
		if err != nil {
			return err
		}
		refTok := float64(steps*batch*seqLen) / refSec
		if err := emit(map[string]any{"op": "loader_ref_copy", "batches_per_sec": float64(steps) / refSec, "tokens_per_sec": refTok}); err != nil {
			return err
		}
		for _, perm := range permsToTest {
			dc := cfg.Data
			dc.Permutation, dc.Packing, dc.Prefetch = perm, packing, 0
			if dc.MixBlock == 0 {
				dc.MixBlock = 1024
			}
			l, err := loader.New(ds, dc, loader.Options{SeqLen: seqLen, Seed: cfg.Run.Seed, Schedule: loader.ConstantBatch(batch)})
			if err != nil {
				return fmt.Errorf("bench loader: %w", err)
			}
			in, tg, sg := make([]int32, batch*seqLen), make([]int32, batch*seqLen), make([]int32, batch*seqLen)
			src := make([]int, batch)
			start := time.Now()
			for s := 0; s < steps; s++ {
				if err := l.Fill(s, batch, 0, batch, in, tg, sg, src); err != nil {
					l.Close()
					return fmt.Errorf("bench loader: %w", err)
				}
			}
			sec := time.Since(start).Seconds()
			l.Close()
			tps := float64(steps*batch*seqLen) / sec
			if err := emit(map[string]any{"op": "loader", "permutation": perm, "packing": packing, "batch": batch, "seq_len": seqLen,
				"batches_per_sec": float64(steps) / sec, "tokens_per_sec": tps, "ratio_to_copy": tps / refTok}); err != nil {
				return err
			}
		}
		// the permutations alone
		for _, perm := range permsToTest {
			p, err := loader.NewPermutation(loader.PermSpec{Kind: perm}, 1_000_003, 42)
			if err != nil {
				return err
			}
			const n = 2_000_000
			var sink int64
			start := time.Now()
			for i := int64(0); i < n; i++ {
				sink += p.Index(i % 1_000_003)
			}
			ns := float64(time.Since(start).Nanoseconds()) / n
			if err := emit(map[string]any{"op": "permutation_index", "permutation": perm, "ns_per_index": ns, "checksum": sink % 1000}); err != nil {
				return err
			}
		}
		return nil
	}
	return cmd
}

// benchDataset is in-memory synthetic data: random tokens below 50257 in
// documents of 1..1000 tokens.
func benchDataset(sources int, tokens int64) *loader.Dataset {
	ds := &loader.Dataset{Name: "synthetic"}
	r := rand.New(rand.NewPCG(1, 2))
	for s := 0; s < sources; s++ {
		m := &loader.MemStream{Tokens: make([]int32, tokens)}
		for i := int64(0); i < tokens; {
			m.Starts = append(m.Starts, i)
			i += 1 + int64(r.IntN(1000))
		}
		for i := range m.Tokens {
			m.Tokens[i] = int32(r.IntN(50257))
		}
		ds.Sources = append(ds.Sources, loader.Source{Name: fmt.Sprintf("src%d", s), Train: m})
	}
	return ds
}

// benchCopy times reading the same number of tokens as steps batches
// sequentially from the sources' train streams.
func benchCopy(ds *loader.Dataset, steps, batch, seqLen int) (float64, error) {
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

func benchLine(m map[string]any) string {
	s := fmt.Sprint(m["op"])
	for _, k := range []string{"permutation", "batches_per_sec", "tokens_per_sec", "ratio_to_copy", "ns_per_index"} {
		if v, ok := m[k]; ok {
			if f, ok := v.(float64); ok {
				s += fmt.Sprintf("  %s=%.4g", k, f)
			} else {
				s += fmt.Sprintf("  %s=%v", k, v)
			}
		}
	}
	return s
}
