package train

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// SkipMemoryCheckEnv names the environment variable that turns the
// start-up memory check off when set to 1 (for a machine whose available
// memory kestrel misreads, or to overcommit on purpose with swap).
const SkipMemoryCheckEnv = "KESTREL_SKIP_MEMORY_CHECK"

// Memory is the estimated memory of a training run, in bytes, by what
// holds it. Params to Activations live for the whole run; Checkpoint and
// EMAEval are transient buffers, counted whole because the garbage
// collector may hold them together (measured on a 17M-parameter run: peak
// RSS within a few % of Total).
type Memory struct {
	Params      int // the weights, float32
	Grads       int // their gradients
	Optimizer   int // AdamW's m and v and its update scratch, 3 × Params (4 × with optim.name = "muon")
	EMA         int // the EMA weights (0 with optim.ema_beta = 0)
	Activations int // the model's activation arena for Sequences sequences, and the RoPE tables
	Checkpoint  int // transient: weights, m, v and EMA weights encoded while a checkpoint is written, 4 × Params
	EMAEval     int // transient: the weights kept aside while the EMA weights are evaluated (0 without EMA)
	Runtime     int // the Go runtime, kestrel's code and small buffers (a constant)
	// Sequences is the largest batch one pass runs: the micro-batch, or
	// the probe batch (train.probe_sequences) when that is larger.
	Sequences int
}

// runtimeBytes is Memory.Runtime: the resident size of a kestrel process
// that has not allocated its model yet, rounded up.
const runtimeBytes = 96 << 20

// Total is the sum of the parts, saturating at math.MaxInt.
func (m Memory) Total() int {
	t := 0
	for _, x := range []int{m.Params, m.Grads, m.Optimizer, m.EMA, m.Activations, m.Checkpoint, m.EMAEval, m.Runtime} {
		if t > math.MaxInt-x {
			return math.MaxInt
		}
		t += x
	}
	return t
}

// microBatch is the number of sequences per forward/backward: the
// largest global batch of the schedule, or train.micro_batch when smaller.
func microBatch(tc Config) (int, error) {
	bs, err := batchsched.FromConfig("train.batch_schedule", tc.BatchSchedule, tc.BatchSize)
	if err != nil {
		return 0, err
	}
	maxB := bs.Max()
	mb := tc.MicroBatch
	if mb <= 0 || mb > maxB {
		mb = maxB
	}
	return mb, nil
}

// EstimateMemory estimates, without allocating any of it, the memory a
// training run of model mc with the [train] section tc holds; ema says
// whether EMA weights are kept (optim.ema_beta > 0). The parameter count
// and the activation arena come from the model's own layout
// (model.Config.NumParams, ActivationBytes). Not counted: the data (a
// byte-level file is read whole, a dataset is memory-mapped), the reading
// of a checkpoint on resume, and the garbage collector's headroom beyond
// the transient buffers.
func EstimateMemory(mc model.Config, tc Config, ema bool) (Memory, error) {
	n, err := mc.NumParams()
	if err != nil {
		return Memory{}, err
	}
	mb, err := microBatch(tc)
	if err != nil {
		return Memory{}, err
	}
	seqs := max(mb, tc.ProbeSequences)
	act, err := mc.ActivationBytes(seqs)
	if err != nil {
		return Memory{}, err
	}
	p := 4 * n // NumParams < 2^50 (model.Validate's bounds): no overflow
	m := Memory{Params: p, Grads: p, Optimizer: 3 * p, Activations: act, Checkpoint: 4 * p, Runtime: runtimeBytes, Sequences: seqs}
	if ema {
		m.EMA, m.EMAEval = p, p
	}
	return m, nil
}

// availableMemory is AvailableMemory; tests replace it.
var availableMemory = func() (int, string, bool) { return AvailableMemory("/") }

// AvailableMemory returns how many bytes this process can still allocate
// and where the figure comes from, reading the files under root ("/" in
// use): /proc/meminfo's MemAvailable (MemFree + Buffers + Cached on
// kernels without it), lowered to a cgroup's memory limit less its usage
// net of reclaimable page cache (cgroup v2 memory.max, or v1
// memory/memory.limit_in_bytes, at /sys/fs/cgroup) when that is smaller.
// ok is false when none of these can be read (not Linux).
func AvailableMemory(root string) (bytes int, source string, ok bool) {
	bytes, source, ok = meminfoAvailable(filepath.Join(root, "proc", "meminfo"))
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	for _, c := range []struct{ limit, usage, stat, inactive string }{
		{"memory.max", "memory.current", "memory.stat", "inactive_file"},
		{"memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat", "total_inactive_file"},
	} {
		limit, err := readInt(filepath.Join(cg, c.limit))
		if err != nil || limit >= 1<<60 { // "max" or unlimited
			continue
		}
		usage, err := readInt(filepath.Join(cg, c.usage))
		if err != nil {
			continue
		}
		inactive, _ := statField(filepath.Join(cg, c.stat), c.inactive)
		avail := max(limit-max(usage-inactive, 0), 0)
		if !ok || avail < bytes {
			bytes, source, ok = avail, "the cgroup's memory limit ("+filepath.Join("/sys/fs/cgroup", c.limit)+") less its usage", true
		}
		break
	}
	return bytes, source, ok
}

// meminfoAvailable reads MemAvailable from a /proc/meminfo file, else
// MemFree + Buffers + Cached.
func meminfoAvailable(path string) (int, string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	kb := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, found := strings.Cut(sc.Text(), ":")
		f := strings.Fields(rest)
		if !found || len(f) == 0 {
			continue
		}
		if v, err := strconv.Atoi(f[0]); err == nil && v >= 0 && v < 1<<50 {
			kb[name] = v
		}
	}
	if v, ok := kb["MemAvailable"]; ok {
		return v << 10, "MemAvailable in /proc/meminfo", true
	}
	free, ok := kb["MemFree"]
	if !ok {
		return 0, "", false
	}
	return (free + kb["Buffers"] + kb["Cached"]) << 10, "MemFree + Buffers + Cached in /proc/meminfo", true
}

// readInt reads a file holding one integer (a cgroup value).
func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// statField reads one "name value" line of a cgroup memory.stat file.
func statField(path, name string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == name {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, name)
}

// checkMemory refuses a run whose estimated memory exceeds the available
// memory, before anything is allocated or written, naming the estimate,
// what is available and the settings that reduce it. It does nothing when
// SkipMemoryCheckEnv is 1, and logs instead of refusing when the available
// memory cannot be read.
func checkMemory(o Options) error {
	est, err := EstimateMemory(o.Model, o.Train, o.Optim.EMABeta > 0)
	if err != nil {
		return fmt.Errorf("train: memory estimate: %w", err)
	}
	if o.Optim.Name == "muon" {
		// Muon's new momentum buffers (one float32 per parameter); its
		// Newton–Schulz scratch, 4 × the largest matrix, is small beside it.
		est.Optimizer += est.Params
	}
	if os.Getenv(SkipMemoryCheckEnv) == "1" {
		return nil
	}
	avail, source, ok := availableMemory()
	if !ok {
		if o.Logger != nil {
			o.Logger.Info("memory check skipped: available memory unknown (no /proc/meminfo)", "estimate", gb(est.Total()))
		}
		return nil
	}
	if est.Total() <= avail {
		return nil
	}
	return fmt.Errorf("train: not enough memory: this run needs about %s (parameters %s, gradients %s, AdamW m, v and update %s, EMA %s, "+
		"activations for %d sequences of %d tokens %s, checkpoint and evaluation buffers %s, runtime %s) but %s is available (%s); "+
		"reduce model.d_model, model.n_layers, model.mlp_hidden or model.vocab (parameters, gradients, optimizer), "+
		"train.micro_batch (or train.batch_size) and model.seq_len (activations), or set optim.ema_beta = 0; "+
		"%s=1 skips this check",
		gb(est.Total()), gb(est.Params), gb(est.Grads), gb(est.Optimizer), gb(est.EMA),
		est.Sequences, o.Model.SeqLen, gb(est.Activations), gb(est.Checkpoint+est.EMAEval), gb(est.Runtime), gb(avail), source, SkipMemoryCheckEnv)
}

// gb renders bytes in decimal units.
func gb(b int) string {
	switch {
	case b == math.MaxInt:
		return "more than 9 EB"
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	default:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	}
}
