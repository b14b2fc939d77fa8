package train

import (
	"context"

	"github.com/kestrel-lm/kestrel/internal/evalcfg"
)

// BenchTasks are the benchmark tasks kestrel knows (internal/evalcfg).
var BenchTasks = evalcfg.Tasks

// BenchConfig is the [eval] section, owned by internal/evalcfg.
type BenchConfig = evalcfg.Config

// HeldoutSet is one user held-out text of the [eval] section.
type HeldoutSet = evalcfg.HeldoutSet

// DefaultBenchConfig returns the defaults of the [eval] section.
func DefaultBenchConfig() BenchConfig { return evalcfg.Default() }

// BenchFunc runs the in-loop benchmarks on the network's current weights
// and returns metric name → value (bench/hellaswag/acc_norm, bpb/wiki, …).
// It must not change the weights. internal/run builds it over internal/eval.
type BenchFunc func(ctx context.Context, net Net, step int) (map[string]float64, error)
