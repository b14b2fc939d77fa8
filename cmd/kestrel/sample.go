package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/train"
)

// sampleCodec maps text to token ids and back for a run.
type sampleCodec struct {
	encode func(string) ([]int32, error)
	decode func([]int32) string
}

// sampleTokenizer returns the codec of a run whose state.json names a
// tokenizer other than "bytes" (runs on prepared datasets). The tokenizer
// issue sets it; until then such runs cannot be sampled.
var sampleTokenizer func(run string, st train.State) (sampleCodec, error)

func newSampleCmd() *cobra.Command {
	var (
		run, prompt  string
		temperature  float64
		topK, tokens int
		topP         float64
		ema          bool
		seed         uint64
	)
	cmd := &cobra.Command{
		Use:   "sample --run runs/NAME [--prompt TEXT] [--temperature T] [--top-k K] [--top-p P] [--ema]",
		Short: "generate text from a run's newest checkpoint",
		Long: `Load the newest valid checkpoint of a run (or a checkpoint directory) and
generate --tokens tokens after --prompt, sampling with temperature, top-k and
top-p (nucleus) truncation; --temperature 0 is greedy. --ema samples from the
EMA weights. Byte-level runs decode bytes directly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if run == "" {
				return fmt.Errorf("sample: --run is required")
			}
			if temperature < 0 || topP <= 0 || topP > 1 || topK < 0 || tokens < 0 {
				return fmt.Errorf("sample: need --temperature >= 0, 0 < --top-p <= 1, --top-k >= 0, --tokens >= 0")
			}
			m, l, err := train.LoadModel(run, ema, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
			if err != nil {
				return fmt.Errorf("sample: %w", err)
			}
			codec, err := codecFor(run, l.State)
			if err != nil {
				return fmt.Errorf("sample: %w", err)
			}
			ctx, err := codec.encode(prompt)
			if err != nil {
				return fmt.Errorf("sample: prompt: %w", err)
			}
			if len(ctx) == 0 {
				ctx = []int32{'\n'}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "sampling %s (step %d%s)\n", l.Dir, l.State.Step, map[bool]string{true: ", EMA weights"}[ema])
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			io.WriteString(out, prompt)
			rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
			T, V := l.State.Model.SeqLen, l.State.Model.Vocab
			logits := make([]float32, V)
			for i := 0; i < tokens; i++ {
				win := ctx
				if len(win) > T {
					win = win[len(win)-T:]
				}
				if err := m.Logits(win, logits); err != nil {
					return fmt.Errorf("sample: %w", err)
				}
				next := pickToken(logits, temperature, topK, topP, rng)
				ctx = append(ctx, next)
				io.WriteString(out, codec.decode([]int32{next}))
				if i%64 == 63 {
					out.Flush()
				}
			}
			io.WriteString(out, "\n")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&run, "run", "", "run directory (newest valid checkpoint) or a checkpoint directory")
	f.StringVar(&prompt, "prompt", "", "text to continue (default: a newline)")
	f.Float64Var(&temperature, "temperature", 0.8, "softmax temperature (0 = greedy)")
	f.IntVar(&topK, "top-k", 200, "keep only the k most likely tokens (0 = all)")
	f.Float64Var(&topP, "top-p", 1.0, "keep the smallest set of tokens whose probability reaches p")
	f.BoolVar(&ema, "ema", false, "sample from the EMA weights")
	f.IntVar(&tokens, "tokens", 500, "tokens to generate")
	f.Uint64Var(&seed, "seed", 1, "sampling seed")
	return cmd
}

func codecFor(run string, st train.State) (sampleCodec, error) {
	if st.Tokenizer == "bytes" || (st.Tokenizer == "" && st.Model.Vocab == 256) {
		return sampleCodec{
			encode: func(s string) ([]int32, error) {
				ids := make([]int32, len(s))
				for i := 0; i < len(s); i++ {
					ids[i] = int32(s[i])
				}
				return ids, nil
			},
			decode: func(ids []int32) string {
				b := make([]byte, len(ids))
				for i, id := range ids {
					b[i] = byte(id)
				}
				return string(b)
			},
		}, nil
	}
	if sampleTokenizer == nil {
		return sampleCodec{}, fmt.Errorf("run %s was trained with tokenizer %q; sampling dataset runs needs the tokenizer hook (not wired yet)", run, st.Tokenizer)
	}
	return sampleTokenizer(run, st)
}

// pickToken samples from softmax(logits/temperature) after top-k and top-p
// truncation; temperature 0 returns the argmax.
func pickToken(logits []float32, temperature float64, topK int, topP float64, rng *rand.Rand) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	if temperature == 0 {
		return int32(best)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if topK > 0 && topK < len(idx) {
		idx = idx[:topK]
	}
	p := make([]float64, len(idx))
	var z float64
	mx := float64(logits[idx[0]])
	for i, j := range idx {
		p[i] = math.Exp((float64(logits[j]) - mx) / temperature)
		z += p[i]
	}
	cum := 0.0
	for i := range p {
		p[i] /= z
		cum += p[i]
		if cum >= topP {
			p, idx = p[:i+1], idx[:i+1]
			break
		}
	}
	z = 0
	for _, v := range p {
		z += v
	}
	r := rng.Float64() * z
	for i, v := range p {
		r -= v
		if r <= 0 {
			return int32(idx[i])
		}
	}
	return int32(idx[len(idx)-1])
}
