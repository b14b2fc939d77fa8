package eval

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/openrun"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Tasks are the task names Run knows: the in-loop benchmarks and
// HeldoutTask.
var Tasks = append(slices.Clone(evalcfg.Tasks), HeldoutTask)

// Options are the settings of Run (kestrel eval).
type Options struct {
	Run        string   // run directory
	Checkpoint string   // last (default), last-good, step-N or a checkpoint directory
	EMA        bool     // evaluate the EMA weights
	Tasks      []string // names from Tasks
	Limit      int      // > 0: the first Limit items of each task (bpb: the first Limit windows)
	Batch      int      // sequences per forward (0: 32)
	// Strict refuses to score a task whose items could have leaked into
	// the run's training data (CheckCoverage); otherwise it is a warning.
	Strict bool
	// Dump, when set, is a file that receives every multiple-choice
	// request as a JSON line (DumpLine), for tools/torchref/eval_ref.py.
	Dump   string
	Status io.Writer
	// Heldout are held-out sets to score besides the run's [eval] heldout
	// (a set of the same name replaces the run's); given, they add the
	// task heldout.
	Heldout []evalcfg.HeldoutSet
	// HeldoutBytes bounds the bytes scored per held-out set (0 = the whole
	// file; < 0 = the run's eval.heldout_bytes, as the loop scored them).
	HeldoutBytes int
	// Precision is the forward's arithmetic: "fp32" ("" too) or "bf16"
	// (every product on bf16 inputs, float32 sums; model.SetPrecision).
	Precision string
}

// BPBResult is the bits per byte of one text.
type BPBResult struct {
	Name    string  `json:"name"`
	File    string  `json:"file"`
	Tokens  int     `json:"tokens"`
	Bytes   int     `json:"bytes"`
	Nats    float64 `json:"nll_nats"`
	BPB     float64 `json:"bpb"`
	Seconds float64 `json:"seconds"`
}

// Result is what Run measured.
type Result struct {
	Run        string      `json:"run"`
	Checkpoint string      `json:"checkpoint"`
	Step       int         `json:"step"`
	EMA        bool        `json:"ema"`
	MC         []MCResult  `json:"multiple_choice,omitempty"`
	BPB        []BPBResult `json:"bpb,omitempty"`
	NLL        []NLLResult `json:"nll,omitempty"`
	Mem        *MemResult  `json:"memorization,omitempty"`
	// Coverage says per task whether its items could be in the training
	// data (CheckCoverage).
	Coverage []Coverage `json:"coverage,omitempty"`
	// EvalHashes are the sha256 of the files each task read
	// ("eval/<task>", as the run manifest records them for [eval]).
	EvalHashes map[string]string `json:"eval_hashes,omitempty"`
}

// maxTextBytes bounds a text file read whole to be scored (bpb).
const maxTextBytes = 256 << 20

// Run loads the run's checkpoint and evaluates opt.Tasks on the shipped
// data (found through internal/datadir).
func Run(opt Options) (*Result, error) {
	if opt.Run == "" {
		return nil, fmt.Errorf("eval: --run is required")
	}
	if len(opt.Tasks) == 0 {
		return nil, fmt.Errorf("eval: no task given (want some of %s)", strings.Join(Tasks, ","))
	}
	if opt.Limit < 0 {
		return nil, fmt.Errorf("eval: --limit %d: want a positive count of items, or 0 for all", opt.Limit)
	}
	if opt.Dump != "" {
		// Never into the run, over a link or a non-regular file (fileguard).
		g := fileguard.File{Path: opt.Dump, What: "dump", Inputs: []string{opt.Run}, Overwrite: true}
		if err := g.Check(); err != nil {
			return nil, fmt.Errorf("eval: --dump: %w", err)
		}
	}
	for _, t := range opt.Tasks {
		if !slices.Contains(Tasks, t) {
			return nil, fmt.Errorf("eval: --tasks: unknown task %q (want some of %s)", t, strings.Join(Tasks, ","))
		}
	}
	sets, hashes, err := heldoutOf(&opt)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	tasks := slices.DeleteFunc(slices.Clone(opt.Tasks), func(t string) bool { return t == HeldoutTask })
	if opt.Checkpoint == "" {
		opt.Checkpoint = "last"
	}
	status := opt.Status
	if status == nil {
		status = io.Discard
	}
	prec, err := ops.Resolve(opt.Precision)
	if err != nil {
		return nil, fmt.Errorf("eval: --precision: %w", err)
	}
	s, l, err := Load(opt.Run, opt.Checkpoint, opt.EMA, status)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	s.Model.SetPrecision(prec)
	s.Batch = opt.Batch
	var dump *bufio.Writer
	if opt.Dump != "" {
		f, err := os.Create(opt.Dump)
		if err != nil {
			return nil, fmt.Errorf("eval: --dump: %w", err)
		}
		defer f.Close()
		dump = bufio.NewWriter(f)
		s.Dump = dump
	}
	cov, err := checkCoverage(opt.Run, l.State, tasks, sets)
	if err != nil {
		return nil, fmt.Errorf("eval: decontamination check: %w", err)
	}
	var warns []string
	for _, c := range cov {
		if w := c.Warning(); w != "" {
			warns = append(warns, w)
			fmt.Fprintln(status, w)
		}
	}
	if opt.Strict && len(warns) > 0 {
		return nil, fmt.Errorf("eval: --strict: %d task(s) not protected from leakage:\n%s", len(warns), strings.Join(warns, "\n"))
	}
	fmt.Fprintf(status, "evaluating %s (step %d%s)\n", l.Dir, l.State.Step, map[bool]string{true: ", EMA weights"}[opt.EMA])
	res, err := s.Evaluate(opt.Run, l.State, tasks, opt.Limit)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	held, err := s.Heldout(sets, opt.HeldoutBytes)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	res.BPB = append(res.BPB, held...)
	res.Coverage = cov
	if res.EvalHashes, err = TaskHashes(tasks); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	maps.Copy(res.EvalHashes, hashes)
	if dump != nil {
		if err := dump.Flush(); err != nil {
			return nil, fmt.Errorf("eval: --dump %s: %w", opt.Dump, err)
		}
	}
	res.Checkpoint, res.Step, res.EMA = l.Dir, l.State.Step, opt.EMA
	return res, nil
}

// Evaluate runs tasks on the scorer's model: run and st say where the
// run's own data is (memorization, bpb-val: the dataset state.json names,
// or the byte-level text of the run's config.toml). limit as Options.Limit.
func (s *Scorer) Evaluate(run string, st checkpoint.State, tasks []string, limit int) (*Result, error) {
	opt := Options{Run: run, Tasks: tasks, Limit: limit}
	res := &Result{Run: run}
	for _, task := range opt.Tasks {
		t0 := time.Now()
		switch task {
		case "hellaswag", "piqa":
			files, err := TaskFiles(task)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", task, err)
			}
			var items []Item
			if task == "hellaswag" {
				items, err = ReadHellaSwag(files[0], opt.Limit)
			} else {
				items, err = ReadPIQA(files[0], files[1], opt.Limit)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", task, err)
			}
			s.Task = task
			ch, err := s.Choose(items)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", task, err)
			}
			r := Tally(task, items, ch)
			r.Seconds = time.Since(t0).Seconds()
			if r.Seconds > 0 {
				r.ItemsPerSec = float64(r.N) / r.Seconds
			}
			res.MC = append(res.MC, r)
		case "bpb":
			files, err := TaskFiles(task)
			if err != nil {
				return nil, fmt.Errorf("bpb: %w", err)
			}
			p := files[0]
			text, err := fileguard.ReadFile(p, maxTextBytes) // a regular file, bounded
			if err != nil {
				return nil, fmt.Errorf("bpb: %w", err)
			}
			if len(bytes.TrimSpace(text)) == 0 {
				return nil, fmt.Errorf("bpb: %s: no text to score (the file is empty)", p)
			}
			n, err := s.TextNLL(string(text), opt.Limit)
			if err != nil {
				return nil, fmt.Errorf("bpb: %s: %w", p, err)
			}
			res.BPB = append(res.BPB, BPBResult{Name: "wikitext-2-test", File: p, Tokens: n.Tokens, Bytes: n.Bytes,
				Nats: n.Nats, BPB: n.BitsPerByte(), Seconds: time.Since(t0).Seconds()})
		case "gsm8k-nll", "memorization", "bpb-val":
			if err := s.runMore(task, opt, st, res); err != nil {
				return nil, fmt.Errorf("%s: %w", task, err)
			}
		}
	}
	return res, nil
}

// taskFiles are the shipped files each task reads, relative to the data
// directory; the tasks on the run's own data read none.
var taskFiles = map[string][]string{
	"hellaswag": {"hellaswag/hellaswag_val_preprocessed.jsonl"},
	"piqa":      {"piqa/valid.jsonl", "piqa/valid-labels.lst"},
	"bpb":       {"wikitext-2/test.txt"},
	"gsm8k-nll": {"gsm8k/test.jsonl"},
}

// TaskFiles returns the paths of the shipped files task reads (none for
// memorization and bpb-val, which read the run's own data).
func TaskFiles(task string) ([]string, error) {
	var out []string
	for _, rel := range taskFiles[task] {
		p, err := datadir.Path(rel)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// TaskHashes returns "eval/<task>" → the sha256 of the files each of tasks
// reads, for the run manifest: a benchmark whose files changed between
// two evaluations is harness drift, not a model change.
func TaskHashes(tasks []string) (map[string]string, error) {
	out := map[string]string{}
	for _, t := range tasks {
		files, err := TaskFiles(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		if len(files) == 0 {
			continue
		}
		h, err := runlog.HashFiles(files...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		out["eval/"+t] = h
	}
	return out, nil
}

// Load resolves checkpoint (last, last-good, step-N or a directory) of run,
// loads its weights (or EMA weights) and the run's codec, and returns a
// Scorer over them with the checkpoint it loaded. Status lines go to status.
func Load(run, ckpt string, ema bool, status io.Writer) (*Scorer, *checkpoint.Loaded, error) {
	if ckpt == "" {
		ckpt = "last"
	}
	if status == nil {
		status = io.Discard
	}
	dir, err := checkpoint.Resolve(run, ckpt)
	if err != nil {
		return nil, nil, fmt.Errorf("--checkpoint %s: %w", ckpt, err)
	}
	m, l, err := checkpoint.LoadModel(dir, ema, slog.New(slog.NewTextHandler(status, nil)))
	if err != nil {
		return nil, nil, err
	}
	codec, err := generate.CodecFor(run, l.State)
	if err != nil {
		return nil, nil, err
	}
	return &Scorer{Model: m, Codec: codec}, l, nil
}

// heldoutOf resolves the held-out sets of opt: the run's [eval] heldout
// (its config.toml) with opt.Heldout over them by name, when the task
// heldout is asked for (opt.Heldout adds it), each file checked
// (CheckHeldout: "heldout/<name>" → sha256); opt.HeldoutBytes < 0 becomes
// the run's eval.heldout_bytes.
func heldoutOf(opt *Options) ([]evalcfg.HeldoutSet, map[string]string, error) {
	if len(opt.Heldout) > 0 && !slices.Contains(opt.Tasks, HeldoutTask) {
		opt.Tasks = append(slices.Clone(opt.Tasks), HeldoutTask)
	}
	if !slices.Contains(opt.Tasks, HeldoutTask) {
		return nil, nil, nil
	}
	cp := rundir.Of(opt.Run).Config()
	cfg, err := openrun.ReadConfig(cp)
	if err == nil {
		cfg, err = cfg.Resolved()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("heldout: the run's config: %w", err)
	}
	bench := cfg.Eval
	for _, h := range opt.Heldout {
		i := slices.IndexFunc(bench.Heldout, func(x evalcfg.HeldoutSet) bool { return x.Name == h.Name })
		if i >= 0 {
			bench.Heldout[i] = h
		} else {
			bench.Heldout = append(bench.Heldout, h)
		}
	}
	if len(bench.Heldout) == 0 {
		return nil, nil, fmt.Errorf("heldout: no held-out sets: %s has no [eval] heldout and no --heldout NAME=PATH was given", cp)
	}
	if err := bench.Validate(0); err != nil {
		return nil, nil, fmt.Errorf("heldout: %w", err)
	}
	if opt.HeldoutBytes < 0 {
		opt.HeldoutBytes = bench.HeldoutBytes
	}
	hashes, err := CheckHeldout(bench.Heldout)
	if err != nil {
		return nil, nil, fmt.Errorf("heldout: %w", err)
	}
	return bench.Heldout, hashes, nil
}
