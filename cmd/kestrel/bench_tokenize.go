package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	tiktoken "github.com/tiktoken-go/tokenizer"

	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// benchTokResult is one line of `kestrel bench tokenize --json`.
type benchTokResult struct {
	Op      string  `json:"op"`
	Impl    string  `json:"impl"`
	Threads int     `json:"threads"`
	MBPerS  float64 `json:"mb_per_s"`
	MB      float64 `json:"mb"`
	Seconds float64 `json:"seconds"`
	Tokens  int64   `json:"tokens"`
	Ratio   float64 `json:"ratio_vs_tiktoken_go,omitempty"`
}

func newBenchTokenizeCmd() *cobra.Command {
	var (
		asJSON  bool
		tokPath string
		inputs  []string
		reps    int
		threads []int
	)
	cmd := &cobra.Command{
		Use:   "tokenize",
		Short: "BPE encode MB/s against tiktoken-go on GPT-2's vocabulary",
		Long: `Encode the same text with kestrel's tokenizer (GPT-2 files) and with
github.com/tiktoken-go/tokenizer (r50k_base) in the same run, first checking
that both give identical ids on every document. Each repetition uses a freshly
loaded kestrel tokenizer, so its pre-token cache starts cold; the best
repetition counts. Documents are split over the threads.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := datadir.Expand(tokPath)
			if err != nil {
				return err
			}
			var readErr error
			var docs []string
			for _, in := range inputs {
				for d := range tokTexts([]string{in}, &readErr) {
					// pieces of ≤ 64 KiB cut after a newline, so threads balance
					for len(d) > 64<<10 {
						cut := strings.LastIndexByte(d[:64<<10], '\n') + 1
						if cut <= 0 {
							cut = 64 << 10
						}
						docs = append(docs, d[:cut])
						d = d[cut:]
					}
					docs = append(docs, d)
				}
			}
			if readErr != nil {
				return fmt.Errorf("bench tokenize: %w", readErr)
			}
			size := 0
			for _, d := range docs {
				size += len(d)
			}
			if size == 0 {
				return fmt.Errorf("bench tokenize: no text in %v", inputs)
			}
			ref, err := tiktoken.Get(tiktoken.R50kBase)
			if err != nil {
				return fmt.Errorf("bench tokenize: tiktoken-go: %w", err)
			}
			tok, err := tokenizer.Load(p)
			if err != nil {
				return err
			}
			// identical output first
			for i, d := range docs {
				want, _, err := ref.Encode(d)
				if err != nil {
					return fmt.Errorf("bench tokenize: tiktoken-go doc %d: %w", i, err)
				}
				got := tok.Encode(d)
				if len(got) != len(want) || !slices.EqualFunc(got, want, func(a int32, b uint) bool { return uint(a) == b }) {
					return fmt.Errorf("bench tokenize: document %d encodes differently from tiktoken-go", i)
				}
			}
			// kestrel: split docs into chunks of ~64 KiB so threads balance
			run := func(threads int, enc func(worker int) func(string) int) (time.Duration, int64) {
				var next int
				var mu sync.Mutex
				var total int64
				var wg sync.WaitGroup
				start := time.Now()
				for w := 0; w < threads; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						e := enc(w)
						var n int64
						for {
							mu.Lock()
							i := next
							next++
							mu.Unlock()
							if i >= len(docs) {
								break
							}
							n += int64(e(docs[i]))
						}
						mu.Lock()
						total += n
						mu.Unlock()
					}(w)
				}
				wg.Wait()
				return time.Since(start), total
			}
			mb := float64(size) / 1e6
			out := cmd.OutOrStdout()
			emit := func(r benchTokResult) {
				if asJSON {
					b, _ := json.Marshal(r)
					fmt.Fprintln(out, string(b))
				} else {
					fmt.Fprintf(out, "%-12s threads=%d  %8.2f MB/s  (%.1f MB, %d tokens)", r.Impl, r.Threads, r.MBPerS, r.MB, r.Tokens)
					if r.Ratio > 0 {
						fmt.Fprintf(out, "  %.2f× tiktoken-go", r.Ratio)
					}
					fmt.Fprintln(out)
				}
			}
			for _, th := range threads {
				var refBest, kBest time.Duration
				var refTok, kTok int64
				for r := 0; r < reps; r++ {
					d, n := run(th, func(int) func(string) int {
						return func(s string) int { ids, _, _ := ref.Encode(s); return len(ids) }
					})
					if refBest == 0 || d < refBest {
						refBest, refTok = d, n
					}
					fresh, err := tokenizer.Load(p)
					if err != nil {
						return err
					}
					d, n = run(th, func(int) func(string) int {
						var buf []int32
						return func(s string) int { buf = fresh.AppendEncode(buf[:0], s); return len(buf) }
					})
					if kBest == 0 || d < kBest {
						kBest, kTok = d, n
					}
				}
				refRate := mb / refBest.Seconds()
				kRate := mb / kBest.Seconds()
				emit(benchTokResult{Op: "tokenize", Impl: "tiktoken-go", Threads: th, MBPerS: refRate, MB: mb, Seconds: refBest.Seconds(), Tokens: refTok})
				emit(benchTokResult{Op: "tokenize", Impl: "kestrel", Threads: th, MBPerS: kRate, MB: mb, Seconds: kBest.Seconds(), Tokens: kTok, Ratio: kRate / refRate})
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "one JSON object per line")
	f.StringVar(&tokPath, "tokenizer", "${KESTREL_DATA}/gpt2-bpe", "GPT-2 tokenizer files (compared with tiktoken-go r50k_base)")
	f.StringSliceVar(&inputs, "input", []string{"${KESTREL_DATA}/tinyshakespeare/input.txt", "${KESTREL_DATA}/wikitext-2/valid.txt", "${KESTREL_DATA}/gsm8k/test.jsonl", "${KESTREL_DATA}/dolma-testdata/cc_en_head"}, "text to encode")
	f.IntVar(&reps, "reps", 3, "repetitions; the fastest counts")
	f.IntSliceVar(&threads, "threads", []int{1, 2}, "thread counts")
	return cmd
}
