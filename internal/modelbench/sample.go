package modelbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// SampleOptions configure Sample.
type SampleOptions struct {
	Model  model.Config // a freshly initialised model of this shape (seed 1) …
	Preset string       // … or of this preset (ModelConfig) when Model is unset …
	Run    string       // … or, when set, a run's newest valid checkpoint (or a checkpoint directory)
	Prompt int          // random prompt tokens, 1..seq_len
	Tokens int          // greedy tokens generated per round, ≥ 1
	Pairs  int          // timed rounds, ≥ 1 (medians count)
}

// SampleResult is what Sample measured: tokens/s of greedy generation with
// the KV cache (model.Decoder, the context shifted to its newest half when
// full, as internal/generate does) and without it (model.Logits over the
// last seq_len tokens for every token, as generate did before), in
// alternating rounds; prompt processing counts in both.
type SampleResult struct {
	CacheTPS, NoCacheTPS float64 // median round
	Speedup              float64 // median per-round ratio
	Prompt, Tokens       int
	Pairs                int
	Source               string // "random init" or the checkpoint directory
	// Model is the model measured (its shape is printed beside the rates).
	Model *model.Model
}

// Sample measures generation with and without the KV cache (see
// SampleResult).
func Sample(ctx context.Context, opt SampleOptions) (SampleResult, error) {
	if opt.Tokens < 1 || opt.Pairs < 1 || opt.Prompt < 1 {
		return SampleResult{}, fmt.Errorf("bench sample: need --tokens >= 1, --pairs >= 1, --prompt >= 1 (got %d, %d, %d)", opt.Tokens, opt.Pairs, opt.Prompt)
	}
	res := SampleResult{Prompt: opt.Prompt, Tokens: opt.Tokens, Pairs: opt.Pairs, Source: "random init"}
	var m *model.Model
	var err error
	if opt.Run != "" {
		var l *checkpoint.Loaded
		m, l, err = train.LoadModel(opt.Run, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			res.Source = l.Dir
		}
	} else {
		cfg := opt.Model
		if cfg == (model.Config{}) {
			cfg, err = ModelConfig(opt.Preset, "", nil)
		}
		if err == nil {
			m, err = model.New(cfg, 1)
		}
	}
	if err != nil {
		return SampleResult{}, fmt.Errorf("bench sample: %w", err)
	}
	c := m.Cfg
	T := c.SeqLen
	if opt.Prompt > T {
		return SampleResult{}, fmt.Errorf("bench sample: --prompt %d exceeds model.seq_len=%d", opt.Prompt, T)
	}
	r := rand.New(rand.NewPCG(1, 3))
	prompt := make([]int32, opt.Prompt)
	for i := range prompt {
		prompt[i] = int32(r.IntN(c.Vocab))
	}
	dec, err := m.NewDecoder(T)
	if err != nil {
		return SampleResult{}, fmt.Errorf("bench sample: %w", err)
	}
	logits := make([]float32, c.Vocab)
	seq := make([]int32, 0, opt.Prompt+opt.Tokens)
	cached := func() error {
		seq = append(seq[:0], prompt...)
		dec.Reset()
		feed := seq
		for i := 0; i < opt.Tokens; i++ {
			if err := dec.Append(feed, logits); err != nil {
				return err
			}
			seq = append(seq, argmax(logits))
			feed = seq[len(seq)-1:]
			if dec.Len() == T {
				dec.Reset()
				feed = seq[len(seq)-max(1, T/2):]
			}
		}
		return nil
	}
	full := func() error {
		seq = append(seq[:0], prompt...)
		for i := 0; i < opt.Tokens; i++ {
			if err := m.Logits(seq[max(0, len(seq)-T):], logits); err != nil {
				return err
			}
			seq = append(seq, argmax(logits))
		}
		return nil
	}
	var withC, without, ratio []float64
	for round := 0; round < opt.Pairs+1; round++ { // round 0 warms up
		if err := ctx.Err(); err != nil {
			return SampleResult{}, err
		}
		t0 := time.Now()
		if err := cached(); err != nil {
			return SampleResult{}, fmt.Errorf("bench sample: %w", err)
		}
		t1 := time.Now()
		if err := full(); err != nil {
			return SampleResult{}, fmt.Errorf("bench sample: %w", err)
		}
		t2 := time.Now()
		if round == 0 {
			continue
		}
		a, b := float64(opt.Tokens)/t1.Sub(t0).Seconds(), float64(opt.Tokens)/t2.Sub(t1).Seconds()
		withC, without, ratio = append(withC, a), append(without, b), append(ratio, a/b)
	}
	res.CacheTPS, res.NoCacheTPS, res.Speedup = median(withC), median(without), median(ratio)
	res.Model = m
	return res, nil
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}
