package run

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/samples"
)

// sampler is the trainer observer of [samples]: at every checkpoint it
// generates text from the checkpoint's weights (internal/samples) and
// appends the records to samples.jsonl. It never stops the run: a
// generation or a write that fails is a warning. At the first step of an
// attempt it cuts samples.jsonl back to the step training restarted from,
// as the trainer cuts metrics.jsonl: the generations of an abandoned
// trajectory are moved to samples.archive-<id>.jsonl when a rewind
// (interventions.jsonl) abandoned them, and dropped on a plain resume
// (they came after the checkpoint resumed from, like the dropped metrics
// lines).
type sampler struct {
	cfg     samples.Config
	prec    ops.Precision // the run's train.precision: samples run the forward the run trains with
	dir     string
	log     *slog.Logger
	started bool
	last    int // the newest step samples.jsonl holds after the cut (no second record of a step)
}

// newSampler returns the [samples] observer of a run, nil when it is off.
// prec is the run's train.precision (the trainer refuses one it cannot
// run before any checkpoint is written).
func newSampler(c samples.Config, prec ops.Precision, dir string, log *slog.Logger) *sampler {
	if !c.Enabled {
		return nil
	}
	if log == nil {
		log = slog.Default()
	}
	return &sampler{cfg: c, prec: prec, dir: dir, log: log, last: -1}
}

// OnStep implements train.Observer: the first step of an attempt cuts
// samples.jsonl back to the step before it.
func (s *sampler) OnStep(sm *runlog.Step) error {
	if !s.started {
		s.started = true
		s.cut(sm.Step - 1)
	}
	return nil
}

// OnEval implements train.Observer.
func (s *sampler) OnEval(*runlog.Eval) error { return nil }

// OnCheckpoint implements train.Observer: it generates from the
// checkpoint just written and appends the records.
func (s *sampler) OnCheckpoint(ev *runlog.Checkpoint) error {
	if !s.started { // a checkpoint before any step of this attempt (an interrupt right after a resume)
		s.started = true
		s.cut(ev.Step)
	}
	if ev.Step <= s.last {
		return nil // this checkpoint's weights were sampled already
	}
	t0 := time.Now()
	gs, err := GenerateSamples(ev.Dir, s.dir, s.cfg, s.prec)
	if err == nil {
		err = runlog.AppendGenerations(s.dir, gs)
	}
	if err != nil {
		s.log.Warn("samples: no generations recorded for this checkpoint", "step", ev.Step, "err", err)
		return nil
	}
	s.last = ev.Step
	s.log.Info("samples", "step", ev.Step, "generations", len(gs), "seconds", time.Since(t0).Seconds())
	return nil
}

// cut removes from samples.jsonl the records after step: to the archive
// of the newest intervention that rewound the run to step, for the
// records written before it, else dropped.
func (s *sampler) cut(step int) {
	id, before := "", 0.0
	ivs, err := runlog.ReadInterventions(s.dir)
	if err != nil {
		s.log.Warn("samples: interventions unreadable; records after the resumed step are dropped, not archived", "err", err)
	}
	for i := len(ivs) - 1; i >= 0; i-- {
		if ivs[i].ToStep == step {
			if t, err := time.Parse(time.RFC3339, ivs[i].Time); err == nil {
				id, before = ivs[i].ID, float64(t.Add(time.Second).Unix()) // Time has whole seconds
			}
			break
		}
	}
	removed, err := runlog.TruncateGenerations(s.dir, step, id, before)
	if err != nil {
		s.log.Warn("samples: samples.jsonl not cut back to the resumed step", "step", step, "err", err)
	} else if removed > 0 {
		s.log.Info("samples: records after the resumed checkpoint removed", "step", step, "records", removed, "archive", id)
	}
	s.last = -1
	gs, _, _, err := runlog.ReadGenerations(s.dir)
	if err != nil {
		s.log.Warn("samples", "err", err)
	}
	for _, g := range gs {
		s.last = max(s.last, g.Step)
	}
}

// GenerateSamples loads the checkpoint at ckptDir once (raw or EMA
// weights) and continues each prompt of c greedily and then sampled
// (internal/generate's KV-cache loop). The records name the checkpoint
// relative to runDir. The forward runs in precision prec (a bf16 run's
// samples are generated as it trains: bf16 products, float32 sums).
func GenerateSamples(ckptDir, runDir string, c samples.Config, prec ops.Precision) ([]runlog.Generation, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m, l, err := checkpoint.LoadModel(ckptDir, c.EMA, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	m.SetPrecision(prec)
	codec, err := generate.CodecFor(ckptDir, l.State)
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	prompts := c.Prompts
	if len(prompts) == 0 {
		prompts = samples.DefaultPrompts(l.State.ByteLevel())
	}
	rel, err := filepath.Rel(runDir, l.Dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = l.Dir
	}
	weights := "raw"
	if c.EMA {
		weights = "ema"
	}
	var out []runlog.Generation
	for _, p := range prompts {
		for _, mode := range []string{runlog.ModeGreedy, runlog.ModeSampled} {
			o := generate.Options{Prompt: p, TopP: 1, Tokens: c.Tokens, Seed: c.Seed}
			if mode == runlog.ModeSampled {
				o.Temperature, o.TopK = c.Temperature, c.TopK
			}
			t0 := time.Now()
			text, err := generate.Continue(m, codec, o, nil)
			if err != nil {
				return out, fmt.Errorf("samples: prompt %q at %s: %w", p, l.Dir, err)
			}
			out = append(out, runlog.Generation{
				Step: l.State.Step, TokensSeen: l.State.TokensSeen, Checkpoint: rel, Weights: weights,
				Prompt: p, Mode: mode, Temperature: o.Temperature, TopK: o.TopK, Seed: c.Seed, Tokens: c.Tokens,
				Text: strings.TrimPrefix(text, p), Seconds: time.Since(t0).Seconds(), UnixTime: float64(time.Now().UnixNano()) / 1e9,
			})
		}
	}
	return out, nil
}
