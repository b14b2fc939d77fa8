package train

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// BenchTasks are the benchmark tasks kestrel knows (internal/eval runs
// them; kestrel eval and the [eval] section name them the same way).
var BenchTasks = []string{"hellaswag", "piqa", "bpb", "gsm8k-nll", "memorization", "bpb-val"}

// BenchConfig is the [eval] section: benchmarks run inside the training
// loop at evaluation steps, their numbers written with the evaluation's
// line of metrics.jsonl (bench/<task>/acc, bpb/wiki, …; docs/eval.md).
type BenchConfig struct {
	Tasks []string `toml:"tasks" comment:"benchmarks run during training, some of hellaswag, piqa, bpb, gsm8k-nll, memorization, bpb-val (see kestrel eval --help and docs/eval.md); empty = none"`
	Every int      `toml:"every" comment:"run them every N steps, a multiple of train.eval_every, with that evaluation (0 = at every evaluation); always at the last step (the only one when train.eval_every = 0)"`
	Limit int      `toml:"limit" comment:"items per task (windows per text for bpb and bpb-val, documents per split for memorization) so an in-loop evaluation stays short; 0 = all (HellaSwag: 10,042 items)"`
}

// DefaultBenchConfig returns the defaults of the [eval] section: no
// in-loop benchmarks.
func DefaultBenchConfig() BenchConfig { return BenchConfig{Limit: 500} }

// Validate reports unknown tasks and an every that is not a multiple of
// train.eval_every (evalEvery; 0 = only the final evaluation, which runs
// the benchmarks whatever every is).
func (c BenchConfig) Validate(evalEvery int) error {
	seen := map[string]bool{}
	for i, t := range c.Tasks {
		if !slices.Contains(BenchTasks, t) {
			return fmt.Errorf("eval.tasks[%d] = %q: unknown task (want some of %s)", i, t, strings.Join(BenchTasks, ", "))
		}
		if seen[t] {
			return fmt.Errorf("eval.tasks[%d] = %q: listed twice", i, t)
		}
		seen[t] = true
	}
	if c.Every < 0 || c.Limit < 0 {
		return fmt.Errorf("eval.every and eval.limit must be >= 0, got %d and %d", c.Every, c.Limit)
	}
	// with train.eval_every = 0 the only evaluation is the last: the
	// benchmarks run there whatever every says
	if c.Every > 0 && len(c.Tasks) > 0 && evalEvery > 0 && c.Every%evalEvery != 0 {
		return fmt.Errorf("eval.every = %d: must be a multiple of train.eval_every = %d (benchmarks run with an evaluation)", c.Every, evalEvery)
	}
	return nil
}

// Due says whether the evaluation at step s runs the benchmarks (final:
// the run's last evaluation).
func (c BenchConfig) Due(s int, final bool) bool {
	return len(c.Tasks) > 0 && (final || c.Every == 0 || s%c.Every == 0)
}

// BenchFunc runs the in-loop benchmarks on the network's current weights
// and returns metric name → value (bench/hellaswag/acc_norm, bpb/wiki, …).
// It must not change the weights. internal/run builds it over internal/eval.
type BenchFunc func(ctx context.Context, net Net, step int) (map[string]float64, error)
