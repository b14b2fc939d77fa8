// Package run assembles one training run from a resolved config: it opens or
// creates the run directory, builds the data source (a prepared dataset
// through the loader, or byte-level text), fills the run manifest with the
// hashes of everything the run reads, attaches the monitor (the ICU panel)
// to the trainer's typed records, optionally serves the dashboard beside
// it, and runs internal/train. cmd/kestrel's train and demo commands are
// flag parsing around it.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/rewind"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/dashboard"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/eval"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// Options are the choices around one training run that are not config.
type Options struct {
	// Fresh refuses an existing run directory instead of resuming.
	Fresh bool
	// Dash serves the live dashboard for the run (at dash.addr) while it trains.
	Dash bool
	// Stdout receives the result line and the dashboard URL; Stderr the
	// interruption notice. Nil discards.
	Stdout, Stderr io.Writer
	// Logger receives the trainer's and the monitor's log lines (default: a
	// text handler on os.Stderr).
	Logger *slog.Logger

	// Comm is the group of ranks of a data-parallel run (dp.go); nil or one
	// rank: a single process.
	Comm comm.Comm

	// Observers are extra trainer observers, after the monitor's, in every
	// attempt (kestrel drill stops a branch at a step with one).
	Observers []train.Observer
}

// Train trains (or resumes) the run in dir with the monitor attached and,
// with opts.Dash, the dashboard serving it, then prints one line saying how
// the run ended. With [rescue] auto_rollback, a SEV0 divergence that paused
// the run rolls it back to its last-good checkpoint (rescue.go) and trains
// on in this process, up to rescue.max_rollbacks times. However it ends
// (finished, Ctrl-C, time limit, SEV0, the rescue ladder's stop), a run
// that started writes its report/ before the lock is released
// (finalreport.go); a report that fails is a warning.
func Train(ctx context.Context, cfg config.Config, dir string, opts Options) (res *train.Result, err error) {
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Comm != nil && opts.Comm.Size() > 1 {
		return trainRanks(ctx, cfg, dir, &opts)
	}
	if err := cfg.Rescue.Validate(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if err := cfg.Samples.Validate(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if r := cfg.Rescue; r.AutoRollback && (!cfg.Monitor.Enabled || !cfg.Monitor.PauseOnSEV0) && !slices.Equal(r.On, []string{rewind.RescueOnDataEvent}) {
		log := opts.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn("rescue.auto_rollback is on, but the monitor never pauses the run (monitor.enabled and monitor.pause_on_sev0 must be true): no rollback will be taken")
	}
	var st attemptState
	defer st.close()
	defer func() { st.finalReport(dir, cfg, res, err, opts.Stdout) }() // every end, the lock still held (finalreport.go)
	for {
		res, ob, ecfg, log, err := st.attempt(ctx, cfg, dir, opts)
		if ob == nil || err == nil {
			return res, err
		}
		plan, perr := planRollback(ctx, ecfg, dir, ob, err)
		if plan == nil {
			if perr != nil {
				summary := stopLadder(dir, ob, err, perr)
				log.Error("AUTO ROLLBACK not taken", "err", perr, "summary", summary)
				err = fmt.Errorf("%w; %w", err, perr)
				if summary != "" {
					err = fmt.Errorf("%w (rescue summary: %s)", err, summary)
				}
			}
			return res, fmt.Errorf("train %s: %w", dir, ob.Finish(err))
		}
		msg := plan.note(ob, ecfg.Rescue.MaxRollbacks)
		_ = ob.Finish(err) // the SEV0's incident bundle is written; the error is the rollback's cause
		log.Warn("AUTO ROLLBACK", "n", plan.n, "max", ecfg.Rescue.MaxRollbacks, "rung", plan.rung, "on", plan.on, "rule", plan.alert.Rule, "step", plan.alert.Step,
			"to_step", plan.To, "skip_from", plan.SkipFrom, "skip_to", plan.SkipTo, "lr_scale", plan.LRScale, "lr_steps", plan.LRSteps,
			"evidence", plan.alert.Evidence, "cause", err)
		iv, rerr := plan.rewind(dir, st.lk, log)
		if rerr != nil {
			return res, fmt.Errorf("train %s: %w; %w", dir, err, rerr)
		}
		fmt.Fprintf(opts.Stderr, "%s (intervention %s); training on\n", msg, iv.ID)
		opts.Fresh = false
	}
}

// attemptState is what outlives one attempt of Train: the run directory's
// lock (held from the first attempt to the end) and the dashboard.
type attemptState struct {
	hosts    []string // every rank's host in a data-parallel run (dp.go)
	lk       *runlock.Lock
	log      *slog.Logger
	stopDash func()
	pending  *opening // rank 0's opening by leadStart, for the attempt that follows (dp.go)
}

func (st *attemptState) close() {
	if p := st.pending; p != nil { // a data-parallel start refused after leadStart
		if c, ok := p.to.Data.(io.Closer); ok {
			_ = c.Close()
		}
	}
	if st.stopDash != nil {
		st.stopDash()
	}
	if st.lk != nil {
		if rerr := st.lk.Release(); rerr != nil {
			st.log.Warn("train: run directory lock", "err", rerr)
		}
	}
}

// opening is what one opening of the run directory made: the trainer's
// options, the config with the interventions' overrides (cfg, raw) and
// resolved (rcfg), and the interventions.
type opening struct {
	to        train.Options
	cfg, rcfg config.Config
	ivs       []runlog.Intervention
}

// open opens the run directory for an attempt (openDir with the attempt's
// options), or hands over the opening a data-parallel leadStart made just
// before (st.pending), so rank 0 builds its options and opens its data
// once.
func (st *attemptState) open(cfg config.Config, dir string, opts Options) (opening, error) {
	if p := st.pending; p != nil {
		st.pending = nil
		return *p, nil
	}
	op := opening{cfg: cfg}
	to, err := st.openDir(dir, opts.Fresh, func() (train.Options, error) {
		// The config the user gave, before the overrides that interventions
		// (kestrel rewind --set) recorded: the manifest compares this one
		// across starts, so a knob an intervention turned is no mismatch.
		baseHash, err := config.Hash(cfg)
		if err != nil {
			return train.Options{}, err
		}
		if op.cfg, op.ivs, err = ApplyInterventions(cfg, dir); err != nil {
			return train.Options{}, fmt.Errorf("train: %w", err)
		}
		if op.rcfg, err = config.Resolve(op.cfg, config.RunSections...); err != nil {
			return train.Options{}, err
		}
		to, err := trainOptions(op.cfg, op.rcfg, dir, opts.Logger)
		if err != nil {
			return to, err
		}
		if len(op.ivs) > 0 {
			to.Manifest.BaseConfigHash = baseHash
			for _, iv := range op.ivs {
				to.Manifest.Interventions = append(to.Manifest.Interventions, iv.ID)
			}
		}
		return to, nil
	})
	op.to = to
	return op, err
}

// attempt runs train.Run once. When it returns an observer and an error,
// the observer is still open: the caller decides on a rollback and calls
// Finish. Otherwise the run has ended (err nil: the result line printed).
// ecfg is the config trained with (the interventions' overrides applied).
func (st *attemptState) attempt(ctx context.Context, cfg config.Config, dir string, opts Options) (res *train.Result, ob *Observer, ecfg config.Config, log *slog.Logger, err error) {
	op, err := st.open(cfg, dir, opts)
	if err != nil {
		return nil, nil, op.cfg, nil, err
	}
	to, ivs, rcfg := op.to, op.ivs, op.rcfg
	cfg = op.cfg
	to.Lock = st.lk
	if cfg.Data.Kind == "dataset" {
		keepDataReport(rcfg.Data.Path, dir, to.Logger)
	}
	ob, err = NewObserver(cfg, dir, to.Logger, &to.Manifest)
	if err != nil {
		return nil, nil, cfg, nil, err
	}
	if l, ok := to.Data.(*loader.Loader); ok {
		batches := LoaderBatches(l)
		ob.Batch = func(step int) *monitor.Batch { // the batch after kestrel rewind --skip-steps
			return batches(rewind.DataIndex(ivs, step) + 1)
		}
	}
	to.Observers = append(to.Observers, ob, lockWatch{st.lk})
	prec, _ := ops.ParsePrecision(cfg.Train.Precision)                  // checked with the config; the trainer refuses what it cannot run
	if sp := newSampler(cfg.Samples, prec, dir, to.Logger); sp != nil { // [samples] at each checkpoint (samples.go)
		to.Observers = append(to.Observers, sp)
	}
	to.Observers = append(to.Observers, opts.Observers...)
	to.Comm = opts.Comm
	ob.setRankHosts(st.hosts)
	if opts.Dash && st.stopDash == nil {
		stop, err := StartDash(ctx, cfg.Dash.Addr, dir, opts.Stdout)
		if err != nil {
			_ = ob.Finish(nil)
			return nil, nil, cfg, nil, err
		}
		st.stopDash = stop
	}
	start := time.Now()
	res, err = train.Run(ctx, to)
	if err != nil {
		return res, ob, cfg, to.Logger, err
	}
	if err := ob.Finish(nil); err != nil {
		return res, nil, cfg, to.Logger, fmt.Errorf("train %s: %w", dir, err)
	}
	wall := time.Since(start).Round(time.Second)
	switch {
	case res.TimeLimited:
		fmt.Fprintf(opts.Stdout, "time limit (train.max_minutes = %g) reached at step %d of %d: final eval val_loss %.4f, checkpoint %s; rerun the same command to continue\n", cfg.Train.MaxMinutes, res.Step, cfg.Train.Steps, res.ValLoss, res.Checkpoint)
	case res.Interrupted:
		fmt.Fprintf(opts.Stderr, "interrupted at step %d; checkpoint %s written; rerun the same command to resume\n", res.Step, res.Checkpoint)
	case math.IsNaN(res.ValLoss): // resumed a finished run: nothing evaluated
		fmt.Fprintf(opts.Stdout, "done: the run was already at step %d (train.steps, or a branch's until_step); nothing to train, run %s\n", res.Step, dir)
	default:
		peak := ""
		if res.PeakRSSBytes > 0 {
			peak = fmt.Sprintf(", peak RSS %d MiB", res.PeakRSSBytes>>20)
		}
		fmt.Fprintf(opts.Stdout, "done: step %d, val_loss %.4f, val_loss_ema %.4f, wall %s%s, run %s\n", res.Step, res.ValLoss, res.ValLossEMA, wall, peak, dir)
	}
	return res, nil, cfg, to.Logger, nil
}

// TrainOptions assembles the trainer's options from the config as given
// (raw: config.toml and config_hash keep its ${KESTREL_DATA}) and its
// paths resolved once by config.Resolve: the config sections, the data
// source and the run manifest's inputs. The monitor (and other observers)
// attach through Options.Observers.
func TrainOptions(raw config.Config, dir string, logger *slog.Logger) (train.Options, error) {
	cfg, err := config.Resolve(raw, config.RunSections...)
	if err != nil {
		return train.Options{}, err
	}
	return trainOptions(raw, cfg, dir, logger)
}

// trainOptions is TrainOptions with the config resolved: raw is what the
// run writes and hashes, and what state.json names its dataset by
// (checkpoint.State.DatasetDir resolves it again where it is read); cfg,
// raw with its paths resolved, is what the run opens.
func trainOptions(raw, cfg config.Config, dir string, logger *slog.Logger) (train.Options, error) {
	hash, err := config.Hash(raw)
	if err != nil {
		return train.Options{}, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	opts := train.Options{
		Dir:        dir,
		Seed:       cfg.Run.Seed,
		Model:      cfg.Model,
		Optim:      cfg.Optim,
		Train:      cfg.Train,
		Checkpoint: cfg.Checkpoint,
		Init:       cfg.Init,
		Debug:      cfg.Debug,
		ConfigHash: hash,
		WriteConfig: func(path string) error {
			return config.WriteFile(path, raw)
		},
		Logger: logger,
	}
	opts.TraceOps = traceOps(cfg.Monitor) // per-op spans of the trace.json window
	// A branch (kestrel branch) records its parent in the manifest and
	// stops at its until_step at every start.
	if opts.Manifest.Parent, err = runlog.ReadBranch(dir); err != nil {
		return opts, err
	} else if opts.Manifest.Parent != nil {
		opts.StopAt = opts.Manifest.Parent.UntilStep
	}
	switch cfg.Data.Kind {
	case "bytes":
		if cfg.Model.Vocab < 256 {
			return opts, fmt.Errorf("data.kind = \"bytes\" needs model.vocab >= 256, got %d", cfg.Model.Vocab)
		}
		tr, va := cfg.Data.Train, cfg.Data.Val
		src, err := datasrc.OpenBytes(tr, va, cfg.Train.ValFraction, cfg.Model.SeqLen, cfg.Run.Seed)
		if err != nil {
			return opts, err
		}
		opts.Data = src
		opts.Tokenizer = "bytes"
		opts.Manifest.Data = &runlog.DataInfo{Kind: "bytes", Train: tr, Val: va, ValFraction: cfg.Train.ValFraction,
			TrainBytes: int64(src.TrainBytes()), ValBytes: int64(src.ValBytes())}
		files := []string{tr}
		if va != "" {
			files = append(files, va)
		}
		if opts.Manifest.DatasetHash, err = runlog.HashFiles(files...); err != nil {
			return opts, fmt.Errorf("data: %w", err)
		}
		opts.Manifest.Tokenizer = "bytes"
	case "dataset":
		l, err := OpenLoader(cfg, logger)
		if err != nil {
			return opts, err
		}
		opts.Data = l
		opts.Tokenizer = raw.Data.Path // state.json's name of the dataset, as the user gave it
		opts.Manifest.Data = &runlog.DataInfo{Kind: "dataset", Path: raw.Data.Path}
		if err := datasetHashes(&opts.Manifest, cfg.Data.Path); err != nil {
			l.Close()
			return opts, err
		}
		if opts.Vocab, err = datasetVocab(cfg.Data.Path); err != nil { // the batch's text vitals (batchvocab.go)
			l.Close()
			return opts, err
		}
		if opts.Manifest.QuarantineHash, err = quarantineHash(cfg.Data); err != nil {
			l.Close()
			return opts, err
		}
	default:
		return opts, fmt.Errorf("data.kind: unknown kind %q (want bytes or dataset)", cfg.Data.Kind)
	}
	err = decontamRecord(&opts.Manifest, cfg, logger)
	if err == nil {
		err = benchOptions(&opts, cfg, dir)
	}
	if err != nil {
		if c, ok := opts.Data.(io.Closer); ok {
			c.Close()
		}
		return opts, err
	}
	return opts, nil
}

// benchOptions sets up the [eval] benchmarks and held-out sets of the
// training loop and records the hashes of the files they read in the
// manifest ("eval/<task>", "heldout/<name>"). A held-out file that cannot
// be scored (missing, not a regular file, empty, not UTF-8) is an error
// here, before training starts.
func benchOptions(opts *train.Options, cfg config.Config, dir string) error {
	if err := cfg.Eval.Validate(cfg.Train.EvalEvery); err != nil {
		return err
	}
	if !cfg.Eval.Enabled() {
		return nil
	}
	held, err := eval.CheckHeldout(cfg.Eval.Heldout)
	if err != nil {
		return err
	}
	batch := cfg.Train.MicroBatch
	if batch == 0 {
		batch = cfg.Train.BatchSize
	}
	fn, err := eval.InLoop(dir, opts.Tokenizer, cfg.Eval, batch, opts.Logger)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	hashes, err := eval.TaskHashes(cfg.Eval.Tasks)
	if err != nil {
		return fmt.Errorf("eval.tasks: %w", err)
	}
	if opts.Manifest.EvalHashes == nil {
		opts.Manifest.EvalHashes = map[string]string{}
	}
	maps.Copy(opts.Manifest.EvalHashes, hashes)
	maps.Copy(opts.Manifest.EvalHashes, held)
	opts.Bench, opts.Benchmarks = trainBench(fn), cfg.Eval
	return nil
}

// datasetHashes records the hash of the dataset's manifest (which lists
// every shard's sha256 and the build fingerprint, so a dataset rebuilt with
// any other setting hashes differently) and of its tokenizer.
func datasetHashes(m *runlog.Manifest, dir string) error {
	var err error
	if m.DatasetHash, err = runlog.HashFile(filepath.Join(dir, "manifest.json")); err != nil {
		return fmt.Errorf("dataset %s: %w", dir, err)
	}
	tok := filepath.Join(dir, "tokenizer.json")
	m.Tokenizer = tok
	if m.TokenizerHash, err = runlog.HashFile(tok); err != nil {
		return fmt.Errorf("dataset %s: %w", dir, err)
	}
	return nil
}

// quarantineHash is the sha256 of the quarantine overlay the loader
// applies (data.quarantine), or "none" when it applies none.
func quarantineHash(dc loader.Config) (string, error) {
	p, err := loader.QuarantinePath(dc)
	if err != nil || p == "" {
		return "none", err
	}
	h, err := runlog.HashFile(p)
	if err != nil {
		return "", fmt.Errorf("data.quarantine: %w", err)
	}
	return h, nil
}

// decontamRecord records what the training data was decontaminated
// against, from the dataset's provenance (what kestrel prepare actually
// checked, with each file's sha256 as it read it), never from the config's
// [prepare.decontam] defaults: byte-level text records "none". An eval
// file that changed since prepare is logged: the dataset no longer
// protects its current version.
func decontamRecord(m *runlog.Manifest, cfg config.Config, log *slog.Logger) error {
	if cfg.Data.Kind != "dataset" {
		m.Decontam = eval.DecontamNone
		return nil
	}
	pv, err := eval.DatasetProvenance(cfg.Data.Path)
	if err != nil {
		return fmt.Errorf("data.path: %w", err)
	}
	var hashes map[string]string
	m.Decontam, hashes = eval.DecontamRecord(pv)
	if len(hashes) > 0 && m.EvalHashes == nil {
		m.EvalHashes = map[string]string{}
	}
	maps.Copy(m.EvalHashes, hashes)
	for _, s := range eval.StaleDecontam(pv) {
		log.Warn("the dataset was decontaminated against another version of an eval file: re-run kestrel prepare", "dataset", cfg.Data.Path, "eval_file", s)
	}
	return nil
}

// StartDash serves the dashboard for one run directory in the background
// (kestrel train --dash) and returns a function that stops it.
func StartDash(ctx context.Context, addr, runDir string, out io.Writer) (func(), error) {
	srv, err := dashboard.New("", []string{runDir})
	if err != nil {
		return nil, fmt.Errorf("dash: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := srv.ListenAndServe(ctx, addr, func(a string) {
			fmt.Fprintf(out, "kestrel dash: http://%s/ (live view of %s)\n", a, runDir)
			ready <- nil
		})
		if err != nil {
			ready <- err
		}
	}()
	if err := <-ready; err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); <-done }, nil
}

// DataReportFile is the copy of the dataset's report.json a run keeps, so
// the dashboard shows the data the run trained on without reading outside
// the run directory.
const DataReportFile = rundir.DataReportName

// keepDataReport copies the dataset's report.json into the run directory.
// A dataset without one (built by another tool) is not an error.
func keepDataReport(dataset, dir string, log *slog.Logger) {
	b, err := os.ReadFile(filepath.Join(dataset, "report.json"))
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(dir, DataReportFile), b)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("run: the dataset report is not kept in the run", "err", err)
	}
}

// trainBench hands eval's in-loop benchmarks to the trainer, which gives
// them its network; they need kestrel's own model (train.NewModelNet).
func trainBench(fn eval.BenchFunc) train.BenchFunc {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, net train.Net, step int) (map[string]float64, error) {
		m := train.Model(net)
		if m == nil {
			return nil, fmt.Errorf("in-loop benchmarks need kestrel's own model (train.NewModelNet)")
		}
		return fn(ctx, m, step)
	}
}
