package eval

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/openrun"

	"github.com/kestrel-lm/kestrel/internal/generate"
)

// Metrics flattens the result into the metric names the training loop
// writes (docs/eval.md):
//
//	bench/<task>/acc, bench/<task>/acc_norm       multiple choice (fraction)
//	bench_stderr/<task>/acc, …/acc_norm          their standard errors
//	bpb/wiki                                      WikiText-2 test, bits/byte
//	bpb/val/<source>, bpb/val                     validation splits, bits/byte
//	bpb/gsm8k-answer                              GSM8K gold answer, bits/byte
//	bpb/heldout/<name>                            a user held-out set, bits/byte
//	memorization/<train|heldout>/<exact_match|token_overlap>
func (r *Result) Metrics() map[string]float64 {
	out := map[string]float64{}
	for _, m := range r.MC {
		out["bench/"+m.Task+"/acc"] = m.Acc
		out["bench/"+m.Task+"/acc_norm"] = m.AccNorm
		out["bench_stderr/"+m.Task+"/acc"] = m.AccStderr
		out["bench_stderr/"+m.Task+"/acc_norm"] = m.AccNormStderr
	}
	for _, b := range r.BPB {
		name := b.Name
		switch {
		case name == "wikitext-2-test":
			name = "wiki"
		case name == "val/all":
			name = "val"
		}
		out["bpb/"+name] = b.BPB
	}
	for _, n := range r.NLL {
		out["bpb/"+strings.TrimSuffix(n.Task, "-nll")+"-answer"] = n.BitsPerB
	}
	if m := r.Mem; m != nil {
		for _, s := range []struct {
			name string
			side MemSide
		}{{"train", m.Train}, {"heldout", m.HeldOut}} {
			out["memorization/"+s.name+"/exact_match"] = s.side.ExactMatch
			out["memorization/"+s.name+"/token_overlap"] = s.side.Overlap
		}
	}
	return out
}

// BenchFunc runs the in-loop benchmarks on a model's current weights and
// returns metric name → value (bench/hellaswag/acc_norm, bpb/wiki, …); it
// does not change the weights. internal/run hands it to the trainer.
type BenchFunc func(ctx context.Context, m *model.Model, step int) (map[string]float64, error)

// InLoop returns the training loop's benchmark function for the [eval]
// section cfg of the run in dir, whose token ids mean what tokenizer says
// ("bytes", or the prepared dataset's path as state.json records it).
// Each call scores the network's current weights on cfg.Tasks with
// cfg.Limit items (batch sequences per forward) and on the held-out sets
// (cfg.HeldoutBytes bytes each), and returns Metrics.
//
// The first call checks that the run's data could not contain the tasks'
// items nor the held-out texts (CheckCoverage) and logs a warning for
// each that could.
func InLoop(dir, tokenizer string, cfg evalcfg.Config, batch int, log *slog.Logger) (BenchFunc, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	checked := false
	tasks := cfg.Tasks
	var codec *generate.Codec // loaded at the first call, kept for the run
	return func(ctx context.Context, m *model.Model, step int) (map[string]float64, error) {
		st := checkpoint.State{Step: step, Tokenizer: tokenizer, Model: m.Cfg}
		if !checked {
			checked = true
			tasks = memorizable(dir, st, tasks, log)
			cov, err := checkCoverage(dir, st, cfg.Tasks, cfg.Heldout)
			if err != nil {
				return nil, fmt.Errorf("decontamination check: %w", err)
			}
			for _, c := range cov {
				if w := c.Warning(); w != "" {
					log.Warn(w)
				}
			}
		}
		if codec == nil {
			c, err := generate.CodecFor(dir, st)
			if err != nil {
				return nil, err
			}
			codec = &c
		}
		s := &Scorer{Model: m, Codec: *codec, Batch: batch, Ctx: ctx}
		res := &Result{}
		if len(tasks) > 0 {
			var err error
			if res, err = s.Evaluate(dir, st, tasks, cfg.Limit); err != nil {
				return nil, err
			}
		}
		held, err := s.Heldout(cfg.Heldout, cfg.HeldoutBytes)
		if err != nil {
			return nil, err
		}
		res.BPB = append(res.BPB, held...)
		return res.Metrics(), nil
	}, nil
}

// memorizable returns tasks without memorization, with a warning saying
// why, when a split of the run's data has no passage as long as
// memorization's prompt + continuation (memDocs): kestrel eval refuses
// such a run, the training loop goes on without the task rather than
// stopping at its first benchmark.
func memorizable(dir string, st checkpoint.State, tasks []string, log *slog.Logger) []string {
	if !slices.Contains(tasks, "memorization") {
		return tasks
	}
	od, err := openrun.OpenData(dir, st)
	if err != nil {
		return tasks // Evaluate reports it
	}
	d := runData{od}
	defer d.Close()
	pre, cont := MemLengths(st.Model.SeqLen)
	for _, split := range []string{shards.Train, shards.Val} {
		if _, err := d.memDocs(split, 1, pre+cont); err != nil {
			log.Warn("[eval] tasks: memorization is left out of this run's in-loop benchmarks", "err", err)
			return slices.DeleteFunc(slices.Clone(tasks), func(t string) bool { return t == "memorization" })
		}
	}
	return tasks
}
