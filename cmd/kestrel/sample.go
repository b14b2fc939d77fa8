package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// sampleCodec maps text to token ids and back for a run.
type sampleCodec struct {
	encode func(string) ([]int32, error)
	decode func([]int32) string
	// start is the context of an empty prompt.
	start []int32
	// vocab, when > 0, is the tokenizer's size: ids at or above it (model
	// vocabulary padding) are never sampled.
	vocab int
}

// sampleTokenizer returns the codec of a run whose state.json names a
// tokenizer other than "bytes": runs on prepared datasets record the
// dataset directory, whose tokenizer.json is loaded (datasetCodec).
var sampleTokenizer = datasetCodec

// genOptions are the sampling settings of generate.
type genOptions struct {
	prompt      string  // text to continue ("" = start of a document)
	temperature float64 // 0 = greedy
	topK        int     // 0 = all tokens
	topP        float64 // nucleus mass in (0, 1]
	tokens      int     // tokens to generate
	ema         bool    // sample from the EMA weights
	seed        uint64  // sampling seed
	// stream, when set, receives the prompt and then the continuation as it
	// is generated (kestrel sample); status receives the "sampling …" line
	// and the checkpoint loader's log.
	stream, status io.Writer
}

// generate loads the newest valid checkpoint of run (or a checkpoint
// directory) and returns opt.prompt followed by opt.tokens sampled tokens,
// decoded with the run's tokenizer. It is deterministic for a given seed.
func generate(run string, opt genOptions) (string, error) {
	if opt.temperature < 0 || opt.topP <= 0 || opt.topP > 1 || opt.topK < 0 || opt.tokens < 0 {
		return "", fmt.Errorf("need temperature >= 0, 0 < top-p <= 1, top-k >= 0, tokens >= 0")
	}
	status := opt.status
	if status == nil {
		status = io.Discard
	}
	m, l, err := train.LoadModel(run, opt.ema, slog.New(slog.NewTextHandler(status, nil)))
	if err != nil {
		return "", err
	}
	codec, err := codecFor(run, l.State)
	if err != nil {
		return "", err
	}
	ctx, err := codec.encode(opt.prompt)
	if err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	if len(ctx) == 0 {
		ctx = append([]int32(nil), codec.start...)
	}
	fmt.Fprintf(status, "sampling %s (step %d%s)\n", l.Dir, l.State.Step, map[bool]string{true: ", EMA weights"}[opt.ema])
	var text strings.Builder
	text.WriteString(opt.prompt)
	var out *bufio.Writer
	if opt.stream != nil {
		out = bufio.NewWriter(opt.stream)
		defer out.Flush()
		io.WriteString(out, opt.prompt)
	}
	rng := rand.New(rand.NewPCG(opt.seed, opt.seed^0x5eed))
	T, V := l.State.Model.SeqLen, l.State.Model.Vocab
	logits := make([]float32, V)
	for i := 0; i < opt.tokens; i++ {
		win := ctx
		if len(win) > T {
			win = win[len(win)-T:]
		}
		if err := m.Logits(win, logits); err != nil {
			return text.String(), err
		}
		if codec.vocab > 0 {
			for j := codec.vocab; j < V; j++ {
				logits[j] = float32(math.Inf(-1))
			}
		}
		next := pickToken(logits, opt.temperature, opt.topK, opt.topP, rng)
		ctx = append(ctx, next)
		piece := codec.decode([]int32{next})
		text.WriteString(piece)
		if out != nil {
			io.WriteString(out, piece)
			if i%64 == 63 {
				out.Flush()
			}
		}
	}
	return text.String(), nil
}

func newSampleCmd() *cobra.Command {
	var opt genOptions
	var run string
	cmd := &cobra.Command{
		Use:   "sample --run runs/NAME [--prompt TEXT] [--temperature T] [--top-k K] [--top-p P] [--ema]",
		Short: "generate text from a run's newest checkpoint",
		Long: `Load the newest valid checkpoint of a run (or a checkpoint directory) and
generate --tokens tokens after --prompt, sampling with temperature, top-k and
top-p (nucleus) truncation; --temperature 0 is greedy. --ema samples from the
EMA weights. Byte-level runs decode bytes directly; runs on a prepared dataset
(data.kind = "dataset") use the dataset's tokenizer.json, so the dataset must
still be at the path the run was trained with. An empty prompt starts a new
document (a newline for byte-level runs, the dataset's document separator
token otherwise).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if run == "" {
				return fmt.Errorf("sample: --run is required")
			}
			if opt.temperature < 0 || opt.topP <= 0 || opt.topP > 1 || opt.topK < 0 || opt.tokens < 0 {
				return fmt.Errorf("sample: need --temperature >= 0, 0 < --top-p <= 1, --top-k >= 0, --tokens >= 0")
			}
			opt.stream, opt.status = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if _, err := generate(run, opt); err != nil {
				return fmt.Errorf("sample: %w", err)
			}
			io.WriteString(cmd.OutOrStdout(), "\n")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&run, "run", "", "run directory (newest valid checkpoint) or a checkpoint directory")
	f.StringVar(&opt.prompt, "prompt", "", "text to continue (default: the start of a new document)")
	f.Float64Var(&opt.temperature, "temperature", 0.8, "softmax temperature (0 = greedy)")
	f.IntVar(&opt.topK, "top-k", 200, "keep only the k most likely tokens (0 = all)")
	f.Float64Var(&opt.topP, "top-p", 1.0, "keep the smallest set of tokens whose probability reaches p")
	f.BoolVar(&opt.ema, "ema", false, "sample from the EMA weights")
	f.IntVar(&opt.tokens, "tokens", 500, "tokens to generate")
	f.Uint64Var(&opt.seed, "seed", 1, "sampling seed")
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
			start: []int32{'\n'},
		}, nil
	}
	if st.Tokenizer == "" {
		return sampleCodec{}, fmt.Errorf("run %s: state.json names no tokenizer and model.vocab is %d, not 256 (bytes)", run, st.Model.Vocab)
	}
	return sampleTokenizer(run, st)
}

// datasetCodec loads the tokenizer of a run trained on a prepared dataset:
// state.json's Tokenizer is the dataset directory (data.path, possibly with
// ${KESTREL_DATA}), which holds tokenizer.json and manifest.json. An empty
// prompt starts from the dataset's document separator (the end-of-text token
// for separator = "eos", which precedes every document but the first; the
// beginning token for "bos").
func datasetCodec(run string, st train.State) (sampleCodec, error) {
	dir, err := datadir.Expand(st.Tokenizer)
	if err != nil {
		return sampleCodec{}, fmt.Errorf("run %s: tokenizer %q: %w", run, st.Tokenizer, err)
	}
	tokPath := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(tokPath); err != nil {
		return sampleCodec{}, fmt.Errorf("run %s was trained on the dataset %s (state.json \"tokenizer\"), but %s cannot be read (%v): the dataset moved or was deleted; restore it there or symlink it", run, st.Tokenizer, tokPath, err)
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return sampleCodec{}, fmt.Errorf("run %s: %w", run, err)
	}
	if tok.VocabSize() > st.Model.Vocab {
		return sampleCodec{}, fmt.Errorf("run %s: %s has %d tokens but the model's vocabulary is %d: the dataset was rebuilt with another tokenizer", run, tokPath, tok.VocabSize(), st.Model.Vocab)
	}
	start, ok := tok.BOS()
	if !ok {
		return sampleCodec{}, fmt.Errorf("run %s: %s has no end-of-text or beginning token to start an empty prompt from", run, tokPath)
	}
	var man struct {
		Separator   string `json:"separator"`
		SeparatorID int32  `json:"separator_id"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err == nil && json.Unmarshal(b, &man) == nil && man.Separator != "" {
		start = man.SeparatorID
	}
	return sampleCodec{
		encode: func(s string) ([]int32, error) { return tok.Encode(s), nil },
		decode: tok.DecodeString,
		start:  []int32{start},
		vocab:  tok.VocabSize(),
	}, nil
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
