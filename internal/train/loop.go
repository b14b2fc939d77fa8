package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/peak"
	"github.com/kestrel-lm/kestrel/internal/replicas"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/stepclock"
	"github.com/kestrel-lm/kestrel/internal/stepvitals"
)

// Options is everything one training run needs. cmd/kestrel/train.go fills
// it from the resolved config; tests fill it directly.
type Options struct {
	Dir        string // run directory (metrics.jsonl, checkpoints/, config.toml, manifest.json)
	Fresh      bool   // refuse an existing Dir instead of resuming
	Seed       uint64 // master seed (model init; data sources are keyed by it too)
	Model      model.Config
	Optim      optim.Config
	Train      Config
	Checkpoint CheckpointConfig
	Init       InitConfig
	Debug      faults.Config
	// Data is read through Fill/FillVal; Run closes it on return when it
	// has a Close() error method (the dataset loader's prefetcher).
	Data       datasrc.Source
	ConfigHash string // recorded in state.json and manifest.json; a resume with another hash is logged
	// Tokenizer names how token ids map to text, recorded in state.json for
	// kestrel sample: "bytes" for byte-level text, else a tokenizer path or hash.
	Tokenizer string
	// Vocab is the run's tokenizer, for the batch's text vitals
	// (batch_bytes_per_token, batch_nonletter_frac), row 0 of the first
	// batch decoded in the log and debug.base64_data_*; nil = bytes when
	// Tokenizer is "bytes", else unknown (batchstats.go; internal/stepvitals).
	Vocab Vocabulary

	// NewNet builds the network (default NewModelNet).
	NewNet NetFactory
	// WriteConfig writes the resolved config to the given path (config.toml
	// in Dir); nil skips it. (internal/config imports this package, so the
	// command passes a closure over config.WriteFile.)
	WriteConfig func(path string) error
	// Manifest holds what the caller knows of the run's inputs (data,
	// dataset, tokenizer and evaluation-set hashes); the trainer completes it
	// (build, machine, model, probe, starts) and writes manifest.json.
	Manifest runlog.Manifest
	// Observers receive every step, evaluation and checkpoint.
	Observers []Observer
	Logger    *slog.Logger
	// Bench runs the [eval] benchmarks (Benchmarks.Tasks) at the
	// evaluations Benchmarks.Due picks; nil = none.
	Bench      BenchFunc
	Benchmarks BenchConfig
	// Lock is the caller's hold on Dir (internal/run takes it before the
	// monitor writes there); Run then neither takes nor releases one. When
	// nil, Run takes the lock of Dir itself and releases it on return, so
	// that two trainers never share a run directory.
	Lock *runlock.Lock

	// TraceOps, when it reports true for a step, records the model's
	// per-op spans of that step (runlog.Step.OpSpans, for trace.json);
	// nil = never. Numerics are unchanged either way.
	TraceOps func(step int) bool
	// Comm is the group of ranks of a data-parallel run (dp.go,
	// docs/distributed.md); nil or one rank: a single process. Rank 0
	// writes the run's files, the others only train.
	Comm comm.Comm

	// StopAt, when > 0 and before Train.Steps, is the last step of this
	// run (a branch's until_step, kestrel branch): after it the run
	// evaluates as at any evaluation step (comparable with the parent's
	// evaluation there), writes a "final" checkpoint and returns; a run
	// already at StopAt has nothing to do. The LR schedule still spans
	// Train.Steps.
	StopAt int
}

// lastStep is the last step this run trains: Train.Steps, or StopAt when
// it comes first.
func (o *Options) lastStep() int {
	if o.StopAt > 0 && o.StopAt < o.Train.Steps {
		return o.StopAt
	}
	return o.Train.Steps
}

// Result summarises a finished (or interrupted) run.
type Result struct {
	Step        int     // last completed step
	ValLoss     float64 // last evaluation (NaN if none ran)
	ValLossEMA  float64
	Resumed     bool // started from a checkpoint in Dir
	Interrupted bool // stopped by context cancellation after writing a checkpoint
	// TimeLimited: this invocation ran past train.max_minutes and stopped
	// before train.steps, after a final evaluation and a checkpoint (kind
	// "time_limit"); rerunning resumes.
	TimeLimited bool
	Checkpoint  string // newest checkpoint written or loaded
	WarmStart   *checkpoint.WarmStartReport
	// PeakGFLOPS is the FMA peak mfu divides by and PeakSource where it
	// came from ("configured", "cached" or "probed"; see internal/peak).
	// PeakProbeRatio is the start-up probe ÷ that peak (0 when no probe
	// ran): well below 1 (< peak.ContentionRatio) means other work shared
	// the cores as the run started.
	PeakGFLOPS     float64
	PeakSource     string
	PeakProbeRatio float64
	// PeakRSSBytes is the largest rss_bytes of this invocation's steps
	// (0 where it is not measured: no /proc).
	PeakRSSBytes int64
}

// NaNError is returned when a loss, gradient or update is not finite: the
// step was not applied and no checkpoint was written from that state.
type NaNError struct {
	Step           int
	Err            error
	LastCheckpoint string
}

func (e *NaNError) Error() string {
	last := e.LastCheckpoint
	if last == "" {
		last = "none written yet"
	}
	return fmt.Sprintf("step %d: %v — update not applied, run stopped; the newest checkpoint %s is untouched (`kestrel checkpoints` says which is last-good) (inspect metrics.jsonl, then resume or lower the LR)", e.Step, e.Err, last)
}

func (e *NaNError) Unwrap() error { return e.Err }

type trainer struct {
	o      Options
	log    *slog.Logger
	net    Net
	ts     []model.Tensor
	opt    *optim.AdamW
	ema    *optim.EMA
	sched  *optim.Schedule
	bsched batchsched.Schedule
	st     checkpoint.State
	ml     *runlog.MetricsWriter
	ckRoot string
	T      int

	inputs, targets, segIDs []int32
	srcs                    []int     // Fill's per-row source indices (micro-batch)
	srcNames                []string  // Data.SourceNames()
	start                   time.Time // when Run was called (train.max_minutes)
	peakFLOPS               float64
	peak                    peak.Peak // where peakFLOPS came from (manifest.json)
	peakDtype               string    // what peak is the peak of (peak.ResolveFor)
	prec                    ops.Precision
	lastCkpt                string
	lastCkptTime            time.Time
	pendingCkptTime         float64
	pendingEvalTime         float64
	probe                   *probeBatch // nil: no probes
	qk                      *qkClipper  // nil: QK-Clip off (optim.qk_clip_tau = 0)
	plan                    rewind.Plan // interventions.jsonl: data offset and LR scale per step
	swap                    string      // this start's optimizer swap, "adamw→muon" (optswap.go); "" for none

	lastEval *runlog.Eval // latest evaluation of this invocation (for checkpoint health)

	reps    *replicas.Set // train.parallel_micro_batches > 1 (sidebyside.go); nil: one after the other
	lastVit *model.Vitals // with reps, the vitals of the step's last pass

	dp        *dataParallel          // nil: a single process
	stepStart time.Time              // when step() began (per-rank vitals)
	faults    faults.Set             // [debug] fault injections (faults.go)
	ent       stepvitals.Batch       // batch_token_entropy's histogram
	track     *stepvitals.OnTrack    // the loss-vs-tokens fit; nil on ranks other than 0
	noise     *stepvitals.NoiseScale // the gradient noise scale; nil on ranks other than 0
	mem       *stepvitals.Memory     // rss_bytes, go_heap_bytes
	tails     stepvitals.Tails       // step_time_p50/p95
	ckWritten int                    // checkpoints of this invocation (ckverify.go)
}

// Preflight checks o before anything is allocated or written, as Run does
// first: every config section's Validate, the data source (present, its
// sequence length, validation data for the evaluations) and the memory
// the run needs (EstimateMemory) against the memory available. A caller
// that creates files before calling Run (the monitor's) calls it first.
func Preflight(o Options) error {
	for _, v := range []interface{ Validate() error }{o.Model, o.Optim, o.Train, o.Checkpoint, o.Init, o.Debug} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	if o.Data == nil {
		return errors.New("train: no data source")
	}
	if err := checkVocab(&o); err != nil {
		return err
	}
	if o.Data.SeqLen() != o.Model.SeqLen {
		return fmt.Errorf("train: data sequence length %d differs from model.seq_len %d", o.Data.SeqLen(), o.Model.SeqLen)
	}
	if err := checkValData(o); err != nil {
		return err
	}
	return checkMemory(o)
}

// Run trains until Train.Steps, resuming from the newest valid checkpoint
// in Dir when there is one. Cancelling ctx writes a checkpoint and returns
// (Result.Interrupted, nil).
func Run(ctx context.Context, o Options) (res *Result, err error) {
	start := time.Now()
	if c, ok := o.Data.(io.Closer); ok {
		defer func() {
			if cerr := c.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("train: closing the data source: %w", cerr)
			}
		}()
	}
	if err := Preflight(o); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, errors.New("train: no run directory")
	}
	if o.Comm != nil && o.Comm.Rank() != 0 { // rank 0 holds the directory; the others only read checkpoints
		t := &trainer{o: o, log: o.Logger, ckRoot: rundir.Of(o.Dir).Checkpoints(), T: o.Model.SeqLen, start: start}
		if t.log == nil {
			t.log = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		return t.run(ctx)
	}
	if o.Fresh {
		if _, err := os.Stat(o.Dir); err == nil {
			return nil, fmt.Errorf("train: --fresh: run directory %s already exists; choose another --out or remove it", o.Dir)
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t := &trainer{o: o, log: o.Logger, ckRoot: rundir.Of(o.Dir).Checkpoints(), T: o.Model.SeqLen, start: start}
	if t.log == nil {
		t.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case o.Lock == nil:
		lk, err := runlock.Acquire(o.Dir, t.log)
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		defer func() {
			if rerr := lk.Release(); rerr != nil {
				t.log.Warn("train: run directory lock", "err", rerr)
			}
		}()
	case !o.Lock.Held():
		return nil, fmt.Errorf("train: the lock passed in for %s was released before the run", o.Lock.Dir())
	case !o.Lock.Holds(o.Dir):
		return nil, fmt.Errorf("train: the lock passed in holds %s, not the run directory %s", o.Lock.Dir(), o.Dir)
	}
	res, err = t.run(ctx)
	if t.ml != nil {
		if cerr := t.ml.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	return res, err
}

// run trains: construct the network and optimizer, restore a checkpoint
// or warm-start, open the run's files (rank 0), then loop.
func (t *trainer) run(ctx context.Context) (*Result, error) {
	res := &Result{ValLoss: math.NaN(), ValLossEMA: math.NaN()}
	if err := t.construct(); err != nil {
		return nil, err
	}
	if err := t.restore(res); err != nil {
		return nil, err
	}
	if t.dp.lead() {
		if done, err := t.open(res); err != nil {
			return nil, err
		} else if done {
			return res, nil
		}
	} else {
		t.log.Info("training as a data-parallel rank", "ranks", t.dp.size, "host", t.dp.c.Host(), "from_step", t.st.Step)
	}
	return t.loop(ctx, res)
}

// construct builds the network, its data-parallel group, the optimizer,
// EMA, QK-Clip, the LR and batch schedules and the batch buffers.
func (t *trainer) construct() error {
	o := t.o
	var err error
	newNet := o.NewNet
	if newNet == nil {
		newNet = NewModelNet
	}
	if t.net, err = newNet(o.Model, o.Seed); err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	if t.prec, err = setPrecision(t.net, o.Train.Precision); err != nil {
		return err
	}
	t.ts = t.net.Tensors()
	if t.dp, err = newDataParallel(o.Comm, t.net, time.Duration(o.Train.CommTimeoutSeconds*float64(time.Second))); err != nil {
		return err
	}
	spans := make([]optim.Span, len(t.ts))
	for i, x := range t.ts {
		spans[i] = optim.Span{Name: x.Name, Offset: x.Offset, Size: x.Size, Kind: x.Kind, Shape: x.Shape}
	}
	params := t.net.Params()
	if t.opt, err = optim.NewAdamW(o.Optim, len(params), spans); err != nil {
		return err
	}
	if o.Optim.EMABeta > 0 {
		t.ema = optim.NewEMA(o.Optim.EMABeta, params)
	}
	qkTau := o.Optim.QKClipTau
	if qkTau == 0 && o.Optim.UsesQKClip() {
		qkTau = 1 // only [[optim.knobs]] turns it on: step sets the τ in force
	}
	for i, e := range o.Optim.Knobs {
		if e.ZLoss != nil && Model(t.net) == nil {
			return fmt.Errorf("train: optim.knobs[%d].z_loss: the network is not a model.Model, whose z-loss weight could change", i)
		}
	}
	if t.qk, err = newQKClipper(qkTau, o.Model, t.ts); err != nil {
		return err
	}
	if t.sched, err = optim.NewSchedule(o.Optim, o.Train.Steps); err != nil {
		return err
	}
	if t.bsched, err = batchsched.FromConfig("train.batch_schedule", o.Train.BatchSchedule, o.Train.BatchSize); err != nil {
		return err
	}
	mb, err := microBatch(o.Train)
	if err != nil {
		return err
	}
	if t.dp != nil { // a rank holds at most its share of the largest batch
		mb = min(mb, (t.bsched.Max()+t.dp.size-1)/t.dp.size)
	}
	t.inputs, t.targets, t.segIDs = make([]int32, mb*t.T), make([]int32, mb*t.T), make([]int32, mb*t.T)
	t.srcs = make([]int, mb)
	t.reps = t.newReplicas(mb)
	t.srcNames = o.Data.SourceNames()
	t.st.GradClipWindow = []bool{}
	return nil
}

// restore resumes from the newest valid checkpoint of the run, else
// warm-starts from init.from, with the interventions' plan either way,
// and gives every rank rank 0's parameters.
func (t *trainer) restore(res *Result) error {
	o := t.o
	if t.dp.lead() {
		checkpoint.RemoveStaleTemps(t.ckRoot)
	}
	loaded, err := checkpoint.Latest(t.ckRoot, t.log)
	if err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	switch {
	case loaded != nil:
		if err := t.loadInterventions(&loaded.State); err != nil {
			return err
		}
		if err := t.resume(loaded); err != nil {
			return err
		}
		t.necromancy(loaded.State, loaded.Dir)
		if t.dp.lead() {
			checkpoint.RemoveHalfDeleted(t.ckRoot, t.log)
		}
		res.Resumed, res.Checkpoint = true, loaded.Dir
		if o.Init.From != "" {
			t.log.Info("resuming; init.from is ignored because the run directory already holds checkpoints", "init.from", o.Init.From)
		}
	case o.Init.From != "":
		if err := t.loadInterventions(nil); err != nil {
			return err
		}
		rep, err := t.warmStart()
		if err != nil {
			return err
		}
		res.WarmStart = rep
	}
	if loaded == nil && o.Init.From == "" {
		if err := t.loadInterventions(nil); err != nil {
			return err
		}
	}
	return t.dp.startParams(t.st.Step, t.net.Params())
}

// open prepares rank 0's side of the run before its first step: the
// metrics cut back to the restored step (done when nothing is left to
// train), the on-track and noise-scale history, config.toml, the probe,
// the FMA peak, manifest.json and the metrics writer.
func (t *trainer) open(res *Result) (done bool, err error) {
	o := t.o
	metricsPath := rundir.Of(o.Dir).Metrics()
	if dropped, err := runlog.TruncateMetrics(metricsPath, t.st.Step); err != nil {
		return false, err
	} else if dropped > 0 {
		t.log.Info("dropped metrics lines written after the resumed checkpoint", "lines", dropped, "step", t.st.Step)
	}
	if t.st.Step >= o.Train.Steps {
		t.log.Info("nothing to do: the run already reached train.steps", "step", t.st.Step, "steps", o.Train.Steps)
		res.Step = t.st.Step
		return true, nil
	}
	t.track, t.noise = stepvitals.NewOnTrack(o.Optim, o.Train.Steps, o.Data, t.sched, t.bsched, t.T), stepvitals.NewNoiseScale()
	if err := stepvitals.ReplayHistory(metricsPath, t.track, t.noise); err != nil {
		return false, err
	}
	if o.StopAt > 0 && t.st.Step >= o.StopAt {
		t.log.Info("nothing to do: the branch already reached its last step", "step", t.st.Step, "until_step", o.StopAt)
		res.Step = t.st.Step
		return true, nil
	}
	if o.WriteConfig != nil {
		if err := o.WriteConfig(rundir.Of(o.Dir).Config()); err != nil {
			return false, err
		}
	}
	if err := t.setupProbe(); err != nil {
		return false, err
	}
	// The first output_kl_to_prev compares against the weights this
	// invocation starts from (the resumed checkpoint, or the initialisation).
	if _, _, _, err := t.probeKL(); err != nil {
		return false, err
	}
	// The FMA peak mfu divides by: train.peak_gflops, else this machine's
	// cached peak (checked by a short probe), else a probe now.
	t.peak, t.peakDtype = peak.ResolveFor(peak.Options{Configured: o.Train.PeakGFLOPS, Logger: t.log}, t.prec.String(), kernels.BF16Impl())
	t.peakFLOPS = t.peak.FLOPS()
	res.PeakGFLOPS, res.PeakSource, res.PeakProbeRatio = t.peak.GFLOPS, string(t.peak.Source), t.peak.ProbeRatio
	if err := t.writeManifest(res); err != nil {
		return false, err
	}
	if t.ml, err = runlog.OpenMetrics(metricsPath); err != nil {
		return false, err
	}
	t.stampState()
	t.log.Info("training", "dir", o.Dir, "params", len(t.net.Params()), "from_step", t.st.Step, "steps", o.Train.Steps,
		"micro_batch", len(t.inputs)/t.T, "peak_gflops", fmt.Sprintf("%.1f", t.peakFLOPS/1e9), "source", t.peak.Source)
	return false, nil
}

// stampState records in the checkpoint state what this invocation runs
// with: the seed and data notes, the config hash, model, EMA and tokenizer.
func (t *trainer) stampState() {
	o := t.o
	t.st.RNG.Seed = o.Seed
	t.st.RNG.Stream = "splitmix64(seed, step, row): batches are pure functions of the step"
	t.st.Data.Note = "DataSource.Fill(step) is a pure function of (seed, step); step is 0-based"
	t.st.ConfigHash = o.ConfigHash
	t.st.Model = o.Model
	t.st.EMABeta = o.Optim.EMABeta
	t.st.Tokenizer = o.Tokenizer
	t.lastCkptTime = time.Now()
}

// loop trains steps until the last one (or a stop every rank agrees on),
// one code path for every rank, so that every rank issues the same
// collectives (dp.go); what only rank 0 does — the step's line out to
// metrics.jsonl and the observers, the evaluations and checkpoints — is
// gated here, at the edge.
func (t *trainer) loop(ctx context.Context, res *Result) (*Result, error) {
	o := t.o
	lead := t.dp.lead()
	runStart := time.Now()
	wall0 := t.st.WallTime
	clock := stepclock.New() // step_time, cpu_time and the contention witnesses, evaluations and checkpoints left out
	defer clock.Close()
	if lead {
		t.mem = stepvitals.NewMemory()
	}
	defer func() { res.PeakRSSBytes = t.mem.Peak(); t.mem.Close() }()
	for s := t.st.Step + 1; s <= o.lastStep(); s++ {
		if stop, err := t.dp.agree(s, ctx.Err() != nil); err != nil {
			return res, err
		} else if stop[0] {
			return t.interrupt(res, wall0, runStart)
		}
		if lead {
			stepStarted(o.Observers, s)
		}
		t.debugHang(ctx, s)
		if !lead && ctx.Err() != nil {
			return res, ctx.Err()
		}
		m, err := t.step(s)
		if err != nil {
			return res, err
		}
		if lead {
			t.st.WallTime = wall0 + time.Since(runStart).Seconds()
			m.WallTime = t.st.WallTime
			clock.Lap(m)
			t.throughput(m)
		}
		if err := t.rankVitals(s, m); err != nil {
			return res, err
		}
		var obErr error
		if lead {
			if err := t.emit(s, m); err != nil {
				return res, err
			}
			obErr = t.notify(s, m)
		}
		res.Step = s
		timeUp, branchEnd, err := t.stopHere(s, lead, obErr)
		if err != nil {
			return res, err
		}
		if lead {
			if err := t.afterStep(ctx, s, m, timeUp, branchEnd, res, clock); err != nil {
				return res, err
			}
			clock.Resume() // after a pause for an evaluation or checkpoint
		}
		if timeUp {
			res.TimeLimited = true
			return res, nil
		}
		if branchEnd {
			return res, nil
		}
	}
	return res, nil
}

// stopHere is where the ranks agree, after step s, whether to stop: on
// rank 0's train.max_minutes (timeUp: stop like a finished run) or its
// observer's error obErr (returned; the other ranks return
// ErrStoppedByRank0); branchEnd is Options.StopAt, the same on every rank.
func (t *trainer) stopHere(s int, lead bool, obErr error) (timeUp, branchEnd bool, err error) {
	o := t.o
	timeUp = lead && s < o.Train.Steps && o.Train.MaxMinutes > 0 && time.Since(t.start).Minutes() >= o.Train.MaxMinutes
	branchEnd = s < o.Train.Steps && s == o.StopAt
	if t.dp != nil { // every rank stops where rank 0 does
		ag, err := t.dp.agree(s, obErr != nil, timeUp)
		if err != nil {
			if lead {
				err = errors.Join(obErr, err)
			}
			return false, false, err
		}
		if !lead && ag[0] {
			return false, false, fmt.Errorf("step %d: rank %d: %w", s, t.dp.rank, ErrStoppedByRank0)
		}
		timeUp = ag[1]
	}
	return timeUp, branchEnd, obErr
}

// throughput fills step m's checkpoint and evaluation time since the step
// before, tokens per second, the dataloader stall and the MFU.
func (t *trainer) throughput(m *runlog.Step) {
	m.CheckpointTime, m.EvalTime = t.pendingCkptTime, t.pendingEvalTime
	t.pendingCkptTime, t.pendingEvalTime = 0, 0
	if m.StepTime > 0 {
		m.TokensPerSec = float64(m.TokensPerUpdate) / m.StepTime
		m.DataloaderStallFrac = m.DataWaitTime / m.StepTime
		if t.peakFLOPS > 0 { // FLOPs are spent on every position, padding included
			m.MFU = t.net.FLOPsPerToken() * float64(m.BatchSize*t.T) / m.StepTime / t.peakFLOPS / float64(t.dp.ranks()) // every rank has rank 0's peak
		}
	}
}

// emit completes step s's line (stepvitals) and writes it to metrics.jsonl.
func (t *trainer) emit(s int, m *runlog.Step) error {
	t.stepVitals(s, m) // memvitals.go: internal/stepvitals
	return t.ml.Write(m)
}

// notify hands step s's line to the observers; the first one's error stops
// the run, once every rank has agreed to stop.
func (t *trainer) notify(s int, m *runlog.Step) error {
	for _, ob := range t.o.Observers {
		if err := ob.OnStep(m); err != nil {
			return fmt.Errorf("step %d: observer stopped the run (no checkpoint written; newest checkpoint %s): %w", s, orNone(t.lastCkpt), err)
		}
	}
	return nil
}

// afterStep logs step s and runs the evaluation and the checkpoint due
// after it: the final ones at the last step, a train.max_minutes stop
// (timeUp) or a branch's end. It pauses clock before either (the caller
// resumes it), so that eval_time and checkpoint_time are not the next
// step's time.
func (t *trainer) afterStep(ctx context.Context, s int, m *runlog.Step, timeUp, branchEnd bool, res *Result, clock *stepclock.Clock) error {
	o := t.o
	if o.Train.LogEvery > 0 && (s%o.Train.LogEvery == 0 || s == 1) {
		t.log.Info("step", "step", s, "loss", fmt.Sprintf("%.4f", m.TrainLossRaw), "loss_ema", fmt.Sprintf("%.4f", m.TrainLossEMA),
			"lr", fmt.Sprintf("%.3g", m.LearningRate), "grad_norm", fmt.Sprintf("%.3f", m.GradGlobalNorm),
			"tok/s", fmt.Sprintf("%.0f", m.TokensPerSec), "skipped", m.Skipped, "clipped", m.Clipped)
	}
	if timeUp {
		t.log.Info("train.max_minutes reached: final evaluation and checkpoint; rerun to continue",
			"step", s, "steps", o.Train.Steps, "max_minutes", o.Train.MaxMinutes)
	}
	if (o.Train.EvalEvery > 0 && s%o.Train.EvalEvery == 0) || s == o.Train.Steps || timeUp || branchEnd {
		clock.Pause()
		e, err := t.evaluate(ctx, s, m.TrainLossEMA, s == o.Train.Steps || timeUp)
		if err != nil {
			return err
		}
		res.ValLoss, res.ValLossEMA = e.ValLoss, e.ValLossEMA
	}
	kind := ""
	switch {
	case s == o.Train.Steps, branchEnd:
		kind = "final"
	case o.Checkpoint.PermanentEvery > 0 && s%o.Checkpoint.PermanentEvery == 0:
		kind = "permanent"
	case timeUp:
		kind = "time_limit"
	case o.Checkpoint.Every > 0 && s%o.Checkpoint.Every == 0,
		o.Checkpoint.EveryMinutes > 0 && time.Since(t.lastCkptTime).Minutes() >= o.Checkpoint.EveryMinutes:
		kind = "rolling"
	}
	if kind == "" {
		return nil
	}
	clock.Pause()
	if err := t.checkpoint(kind); err != nil {
		return err
	}
	res.Checkpoint = t.lastCkpt
	return nil
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// interrupt ends the run on a stop every rank agreed to (Ctrl-C): rank
// 0 writes a checkpoint of the last step unless it has one.
func (t *trainer) interrupt(res *Result, wall0 float64, start time.Time) (*Result, error) {
	if !t.dp.lead() {
		res.Interrupted, res.Step = true, t.st.Step
		return res, nil
	}
	t.st.WallTime = wall0 + time.Since(start).Seconds()
	if t.lastCkpt == "" || filepath.Base(t.lastCkpt) != checkpoint.Name(t.st.Step) {
		if err := t.checkpoint("interrupt"); err != nil {
			return res, fmt.Errorf("interrupted at step %d, and the checkpoint failed: %w", t.st.Step, err)
		}
	}
	t.log.Info("interrupted: checkpoint written", "step", t.st.Step, "dir", t.lastCkpt)
	res.Interrupted, res.Checkpoint, res.Step = true, t.lastCkpt, t.st.Step
	return res, nil
}

// step runs optimizer step s (1-based) and returns its metrics line, in
// the order of llm.c's train loop: accumulate the gradient over the
// micro-batches, take the learning rate, apply the update, record it.
func (t *trainer) step(s int) (*runlog.Step, error) {
	t.stepStart = time.Now()
	// kestrel rewind --skip-steps: step s trains on the batch of data step
	// dataIdx (its size included); the LR schedule still counts real steps.
	dataIdx := t.plan.DataIndex(s)
	B := t.bsched.At(dataIdx)
	mb := len(t.inputs) / t.T
	lo, hi := t.dp.share(B) // this rank's rows (all of them in a single process)
	nMicro := (hi - lo + mb - 1) / mb
	m := &runlog.Step{Step: s, BatchSize: B, MicroBatches: nMicro, UnixTime: float64(time.Now().UnixNano()) / 1e9,
		Spans: make([]runlog.Span, 0, 3*nMicro+1)} // data_wait, forward, backward per micro-batch, then optimizer
	kn, qk := t.knobs(s, m)
	if mm := Model(t.net); mm != nil && t.o.TraceOps != nil && t.o.TraceOps(s) {
		mm.Trace = &opRecorder{spans: &m.OpSpans}
		defer func() { mm.Trace = nil }()
	}
	if d := t.faults.Stall(s); d > 0 { // [debug] stall_at_step
		time.Sleep(d)
	}
	a, err := t.accumulate(s, dataIdx, lo, hi, m, qk)
	if err != nil {
		return m, err
	}
	lr, pt := t.learningRate(s, dataIdx, kn)
	r, err := t.apply(s, m, a, lr, qk)
	if err != nil {
		return m, err
	}
	t.record(s, m, a, r, lr, pt, dataIdx)
	return m, nil
}

// knobs sets the [[optim.knobs]] in force at step s (the optimizer's,
// the z-loss weight, QK-Clip's τ) and records them in m; the QK-Clip it
// returns is nil when τ is 0.
func (t *trainer) knobs(s int, m *runlog.Step) (optim.Knobs, *qkClipper) {
	o := t.o
	kn := o.Optim.KnobsAt(s, o.Model.ZLoss)
	t.opt.SetKnobs(kn)
	if mm := Model(t.net); mm != nil {
		mm.Cfg.ZLoss = kn.ZLoss
	}
	qk := t.qk
	if qk != nil {
		qk.tau = kn.QKClipTau
		if kn.QKClipTau == 0 {
			qk = nil
		}
	}
	m.KnobMaxGradNorm, m.KnobZLoss, m.KnobQKClipTau, m.KnobLRScale = kn.MaxGradNorm, kn.ZLoss, kn.QKClipTau, kn.LRScale
	if kn.ClipUpdateNorm {
		m.KnobUpdateSigma = kn.UpdateSigma
	}
	if o.Optim.SkipBadSteps {
		m.KnobSkipSigma = kn.SkipSigma
	}
	return kn, qk
}

// accumulated is what a step's micro-batches summed: the loss and z-loss
// (each pass weighted by its share of the batch), the tokens the loss
// counted, the padding and the tokens per source.
type accumulated struct {
	B            int // the global batch (rows)
	loss, zl     float64
	tokens, pads int
	perSrc       []int
}

// accumulate runs forward and backward over this rank's rows [lo, hi) of
// data step dataIdx in micro-batches, the gradient summed in the net (and
// all-reduced over the ranks), and records the batch's vitals in m.
func (t *trainer) accumulate(s, dataIdx, lo, hi int, m *runlog.Step, qk *qkClipper) (*accumulated, error) {
	o := t.o
	a := &accumulated{B: m.BatchSize, perSrc: make([]int, len(t.srcNames))}
	t.ent.Begin(vocabFor(&o), o.Model.Vocab, t.T)
	if m.MicroBatches > 0 { // the first pass writes the gradient
		t.net.StartAccumulation()
	} else { // a rank without rows this step all-reduces zeros
		t.net.ZeroGrads()
	}
	t.dp.beginStep()
	t.noise.Begin()
	mb := len(t.inputs) / t.T
	for k := 0; k < m.MicroBatches && t.reps == nil; k++ {
		if err := t.micro(s, dataIdx, k, lo+k*mb, min(mb, hi-lo-k*mb), m, a, qk); err != nil {
			return a, err
		}
	}
	if err := t.sideBySide(s, dataIdx, lo, hi, m, a, qk); err != nil { // train.parallel_micro_batches (sidebyside.go)
		return a, err
	}
	if t.dp != nil {
		if err := t.reduceStep(s, &a.loss, &a.zl, &a.tokens, &a.pads, a.perSrc); err != nil {
			return a, err
		}
		if err := t.dp.qkMax(s, qk); err != nil {
			return a, err
		}
		if err := t.reduceVitals(s); err != nil {
			return a, err
		}
	}
	m.PadFraction = float64(a.pads) / float64(a.B*t.T)
	// batch_token_entropy and the batch's data vitals, this rank's rows (stepvitals.Batch)
	t.ent.Record(m)
	m.TokensPerUpdate = int64(a.tokens)            // the positions the loss counted
	if counted := sumInts(a.perSrc); counted > 0 { // a source that does not report rows gets no shares
		m.SourceMixShare = make(map[string]float64, len(a.perSrc))
		for i, c := range a.perSrc {
			m.SourceMixShare[t.srcNames[i]] = float64(c) / float64(counted)
		}
	}
	mix := datasrc.MixAt(t.o.Data, t.srcNames, dataIdx)
	m.SourceMixTarget, m.DataStageEntry, m.DataStageRamp = mix.Target, mix.Entry, mix.Ramp
	if t.faults.NaN(s) {
		a.loss = math.NaN()
		t.net.Grads()[0] = float32(math.NaN())
	}
	return a, nil
}

// micro is pass k of step s: n rows from row r0 of the batch filled
// (fill), then forward and backward.
func (t *trainer) micro(s, dataIdx, k, r0, n int, m *runlog.Step, a *accumulated, qk *qkClipper) error {
	B, nMicro := a.B, m.MicroBatches
	t0 := time.Now()
	b, err := t.fill(s, dataIdx, r0, n, replicas.Slot{Inputs: t.inputs, Targets: t.targets, SegIDs: t.segIDs, Srcs: t.srcs}, a)
	if err != nil {
		return fmt.Errorf("step %d: %w", s, err)
	}
	t1 := time.Now()
	m.DataWaitTime += t1.Sub(t0).Seconds()
	if k == nMicro-1 {
		t.dp.arm(t.net) // the last pass: start each layer's all-reduce when its backward is done
	}
	st, err := t.net.ForwardBackward(b, float32(n)/float32(B))
	t.dp.disarm(t.net)
	if err != nil {
		return fmt.Errorf("step %d: forward/backward: %w", s, err)
	}
	if nMicro > 1 && (t.dp == nil || k < nMicro-1) { // the last pass all-reduces: not this rank's gradient
		t.noise.Micro(t.net.Grads(), k, n, float64(n)/float64(B), k == nMicro-1)
	}
	qk.observe(t.net.Vitals())
	fwd, bwd := st.ForwardTime, st.BackwardTime
	if fwd == 0 && bwd == 0 { // a Net that does not time its passes: all of it is forward
		fwd = time.Since(t1)
	}
	m.ForwardTime += fwd.Seconds()
	m.BackwardTime += bwd.Seconds()
	m.Spans = append(m.Spans, runlog.Span{Name: "data_wait", Start: t0, Dur: t1.Sub(t0)}, runlog.Span{Name: "forward", Start: t1, Dur: fwd}, runlog.Span{Name: "backward", Start: t1.Add(fwd), Dur: bwd})
	a.add(st, n)
	return nil
}

// fill fills n rows from row r0 of data step dataIdx's batch into buf
// (the [debug] data faults applied), counts their pads, sources and
// tokens in a, and returns them as a batch.
func (t *trainer) fill(s, dataIdx, r0, n int, buf replicas.Slot, a *accumulated) (*model.Batch, error) {
	o := t.o
	in, tg, sg, sr := buf.Inputs[:n*t.T], buf.Targets[:n*t.T], buf.SegIDs[:n*t.T], buf.Srcs[:n]
	for i := range sr {
		sr[i] = -1
	}
	if err := o.Data.Fill(dataIdx, a.B, r0, n, in, tg, sg, sr); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	for row, x := range sr {
		real := 0
		for _, y := range tg[row*t.T : (row+1)*t.T] {
			if y >= 0 {
				real++
			}
		}
		a.pads += t.T - real
		if x >= 0 && x < len(a.perSrc) {
			a.perSrc[x] += real
		}
	}
	if o.Debug.Poisoned(dataIdx + 1) { // [debug] corrupt_batch_at_step, poison_data_*
		faults.PoisonRows(o.Seed, dataIdx+1, r0, t.T, o.Model.Vocab, in, tg)
	}
	base64Fault(&o, dataIdx+1, r0, t.T, in, tg) // [debug] base64_data_* (batchstats.go)
	t.ent.Add(tg)
	t.ent.LogFirstRow(t.log, s, a.B, in)
	b := &model.Batch{B: n, T: t.T, Inputs: in, Targets: tg}
	if o.Model.DocMask {
		b.SegIDs = sg
	}
	return b, nil
}

// add sums one pass of n rows: its loss and z-loss weighted by its share
// of the batch, its tokens.
func (a *accumulated) add(st model.Stats, n int) {
	w := float64(n) / float64(a.B)
	a.loss += w * st.Loss
	a.zl += w * st.ZLoss
	a.tokens += st.Tokens
}

// learningRate is step s's learning rate: the schedule's, scaled for the
// batch size of data step dataIdx, by an intervention, the knobs and the
// [debug] LR faults.
func (t *trainer) learningRate(s, dataIdx int, kn optim.Knobs) (float64, optim.Point) {
	pt := t.sched.At(s - 1)
	lr := pt.LR
	if t.o.Optim.SqrtBatchScaling {
		lr *= t.bsched.LRScale(dataIdx) // of the batch size used
	}
	if f := t.plan.LRScale(s); f != 1 { // kestrel rewind --lr-scale
		lr *= f
	}
	if kn.LRScale != 1 { // [[optim.knobs]] lr_scale
		lr *= kn.LRScale
	}
	if f := t.faults.LRFactor(s); f != 1 { // [debug] lr_spike_*, lr_high_*
		lr *= f
	}
	return lr, pt
}

// apply takes the optimizer step at lr (a non-finite loss, gradient or
// update stops the run: a NaNError, its line written by rank 0), then
// QK-Clip, the MoE router bias, the noise scale and the EMA.
func (t *trainer) apply(s int, m *runlog.Step, a *accumulated, lr float64, qk *qkClipper) (optim.Result, error) {
	t0 := time.Now()
	params := t.net.Params()
	r, err := t.opt.StepEMA(params, t.net.Grads(), a.loss, lr, t.foldEMA(qk))
	if err != nil {
		if errors.Is(err, optim.ErrNonFinite) {
			if t.ml != nil { // rank 0 (every rank stops here: they hold the same gradient)
				if werr := t.ml.Write(&runlog.NaNStop{Step: s, Message: err.Error()}); werr != nil {
					t.log.Error("metrics", "err", werr)
				}
				if werr := t.ml.Sync(); werr != nil {
					t.log.Error("metrics", "err", werr)
				}
			}
			return r, &NaNError{Step: s, Err: err, LastCheckpoint: t.lastCkpt}
		}
		return r, fmt.Errorf("step %d: optimizer: %w", s, err)
	}
	if err := qk.apply(params, r.Skipped, m); err != nil {
		return r, err
	}
	updateRouterBias(t.net, r.Skipped) // MoE, moe_balance = bias (moe.go)
	t.noise.Finish(r.GradNorm, a.B, float64(a.tokens)/float64(a.B), r.Skipped, m)
	if !r.Skipped && t.ema != nil && !r.EMAFolded {
		t.ema.Update(params)
	}
	m.OptimizerTime = time.Since(t0).Seconds()
	m.Spans = append(m.Spans, runlog.Span{Name: "optimizer", Start: t0, Dur: time.Since(t0)})
	return r, nil
}

// foldEMA is the EMA for StepEMA's θ pass: none where QK-Clip (on at
// this step) or the MoE router bias move the params after the step.
func (t *trainer) foldEMA(qk *qkClipper) *optim.EMA {
	if mm := Model(t.net); qk != nil || !foldEMA || mm != nil && mm.Cfg.RouterBiasMoves() {
		return nil
	}
	return t.ema
}

var foldEMA = true // false: the EMA's own pass after every step (tests)

// record advances the run's state by step s (counters, the loss EMA, the
// grad-clip window) and fills the rest of its line: losses, LR, norms,
// the model's and optimizer's vitals and the on-track reading.
func (t *trainer) record(s int, m *runlog.Step, a *accumulated, r optim.Result, lr float64, pt optim.Point, dataIdx int) {
	st := &t.st
	st.Step = s
	st.TokensSeen += m.TokensPerUpdate
	st.TokensComputed += int64(a.B * t.T)
	st.Data.NextFillStep = s
	st.DataOffset = dataIdx - (s - 1)
	st.Interventions = t.plan.Applied(s)
	st.Schedule.LR, st.Schedule.Phase, st.Schedule.Cycle, st.Schedule.BatchSize = lr, pt.Phase, pt.Cycle, a.B
	beta := t.o.Train.LossEMABeta
	st.LossEMA = beta*st.LossEMA + (1-beta)*a.loss
	st.LossEMASteps++
	if r.Skipped {
		st.SkippedUpdates++
	}
	if r.UpdateClipped {
		st.ClippedUpdates++
	}
	st.GradClipWindow = append(st.GradClipWindow, r.GradClipped)
	if len(st.GradClipWindow) > 100 {
		st.GradClipWindow = st.GradClipWindow[len(st.GradClipWindow)-100:]
	}
	nClip := 0
	for _, c := range st.GradClipWindow {
		if c {
			nClip++
		}
	}
	m.TokensSeen, m.TokensComputed = st.TokensSeen, st.TokensComputed
	m.StepsSeen = s - st.SkippedUpdates
	m.TrainLossRaw, m.ZLoss = a.loss, a.zl
	m.TrainLossEMA = st.LossEMA / (1 - math.Pow(beta, float64(st.LossEMASteps)))
	m.LearningRate, m.LRPhase, m.LRCycle, m.LRPhaseEntry = lr, pt.Phase, pt.Cycle, pt.Entry
	m.GradGlobalNorm, m.GradClipped = r.GradNorm, r.GradClipped
	m.UpdateNorm, m.UpdateNormPostClip, m.UpdateToWeight, m.ParamNorm = r.UpdateNorm, r.UpdateNormPost, r.UpdateToWeight, r.ParamNorm
	if thr := r.UpdateClipAt; !math.IsInf(thr, 0) && !math.IsNaN(thr) {
		m.UpdateClipThreshold = &thr
	}
	m.Clipped, m.Skipped, m.SkipReason = r.UpdateClipped, r.Skipped, r.SkipReason
	m.SkippedUpdates, m.ClippedUpdates = st.SkippedUpdates, st.ClippedUpdates
	m.GradClipRate = float64(nClip) / float64(len(st.GradClipWindow))
	v := t.net.Vitals()
	if t.reps != nil { // the vitals of the step's last pass (sidebyside.go)
		v = t.lastVit
	}
	if v != nil {
		stepvitals.FillModel(m, v)
	}
	stepvitals.FillOptimNorms(m, r, t.opt.Spans(), t.opt.SpanSquares())
	t.track.Observe(m)
}

// evaluate computes the validation loss with the raw and the EMA weights;
// the final evaluation (the last step, or a train.max_minutes stop) reads
// every validation row.
func (t *trainer) evaluate(ctx context.Context, s int, trainEMA float64, all bool) (*runlog.Eval, error) {
	start := time.Now()
	e := &runlog.Eval{Step: s, TokensSeen: t.st.TokensSeen, WallTime: t.st.WallTime,
		ValLossEMA: math.NaN(), FixedProbeLoss: math.NaN(), LogitEntropyProbe: math.NaN(), TopKMassProbe: math.NaN()}
	raw, tok, slices, err := t.valLoss(all)
	if err != nil {
		return e, fmt.Errorf("step %d: eval: %w", s, err)
	}
	e.ValLoss, e.ValTokens = raw, tok
	if len(slices) > 1 {
		e.SliceValLoss = slices
	}
	if t.ema != nil {
		params := t.net.Params()
		saved := append([]float32(nil), params...)
		copy(params, t.ema.W)
		emaLoss, _, _, err := t.valLoss(all)
		copy(params, saved)
		if err != nil {
			return e, fmt.Errorf("step %d: eval (EMA weights): %w", s, err)
		}
		e.ValLossEMA = emaLoss
	}
	e.TrainValGap = raw - trainEMA
	if pm, ok, err := t.probeEval(); err != nil {
		return e, fmt.Errorf("step %d: eval: %w", s, err)
	} else if ok {
		e.FixedProbeLoss = pm.Loss
		if !math.IsNaN(pm.Entropy) {
			e.LogitEntropyProbe, e.TopKMassProbe = pm.Entropy, pm.TopKMass
		}
	}
	if t.o.Bench != nil && t.o.Benchmarks.Due(s, all) {
		b0 := time.Now()
		vals, err := t.o.Bench(ctx, t.net, s)
		switch {
		case err != nil && ctx.Err() != nil:
			// interrupted: the loop checkpoints and stops next
			t.log.Warn("benchmarks interrupted; this evaluation has none", "step", s)
		case err != nil:
			return e, fmt.Errorf("step %d: benchmarks ([eval] tasks): %w", s, err)
		default:
			e.Bench = vals
			t.log.Info("benchmarks", "step", s, "tasks", strings.Join(t.o.Benchmarks.Names(), ","), "seconds", fmt.Sprintf("%.1f", time.Since(b0).Seconds()))
		}
	}
	e.EvalTime = time.Since(start).Seconds()
	t.pendingEvalTime += e.EvalTime
	if err := t.ml.Write(e); err != nil {
		return e, err
	}
	t.log.Info("eval", "step", s, "val_loss", fmt.Sprintf("%.4f", e.ValLoss), "val_loss_ema", fmt.Sprintf("%.4f", e.ValLossEMA), "seconds", fmt.Sprintf("%.1f", e.EvalTime))
	t.lastEval = e
	for _, ob := range t.o.Observers {
		if err := ob.OnEval(e); err != nil {
			return e, fmt.Errorf("step %d: observer stopped the run at eval: %w", s, err)
		}
	}
	return e, nil
}

// valLoss is the validation loss of the trained mixture (datasrc.ValMix: the
// sources of weight > 0 at the current step, weighted as the mixture draws
// them), and per source: eval_batches × the first batch of rows spread
// evenly over each source's split, or every row when all is set. With
// replicas (train.parallel_micro_batches) the batches run side by side,
// the same bits (replicas.Evaluate).
func (t *trainer) valLoss(all bool) (float64, int, map[string]float64, error) {
	d, T := t.o.Data, t.T
	mb := len(t.inputs) / T
	want := t.o.Train.EvalBatches * t.bsched[0].Batch
	if all {
		want = 0
	}
	mix := datasrc.NewValMix(d, t.plan.DataIndex(max(t.st.Step, 1)))
	per := map[string]float64{}
	for src, name := range d.SourceNames() {
		rows := d.ValRows(src)
		if rows == 0 {
			continue
		}
		n := rows
		if want > 0 && want < rows {
			n = want
		}
		fill := func(k int, buf replicas.Slot) (*model.Batch, error) {
			r0, nr := k*mb, min(mb, n-k*mb)
			for j := 0; j < nr; j++ {
				row := (r0 + j) * rows / n // spread evenly over the set
				if err := d.FillVal(src, row, 1, buf.Inputs[j*T:(j+1)*T], buf.Targets[j*T:(j+1)*T], buf.SegIDs[j*T:(j+1)*T]); err != nil {
					return nil, err
				}
			}
			b := &model.Batch{B: nr, T: T, Inputs: buf.Inputs[:nr*T], Targets: buf.Targets[:nr*T]}
			if t.o.Model.DocMask {
				b.SegIDs = buf.SegIDs[:nr*T]
			}
			return b, nil
		}
		var ssum float64
		stok := 0
		buf := replicas.Slot{Inputs: t.inputs, Targets: t.targets, SegIDs: t.segIDs}
		if err := replicas.Evaluate(t.evalReps(), t.net, buf, (n+mb-1)/mb, fill, func(_ int, st model.Stats) { ssum += st.Loss * float64(st.Tokens); stok += st.Tokens }); err != nil {
			return 0, 0, nil, err
		}
		if stok > 0 {
			per[name] = ssum / float64(stok)
		}
		mix.Add(src, ssum, stok)
	}
	loss, total := mix.Loss()
	if total == 0 {
		return math.NaN(), 0, per, errors.New("no validation tokens (empty validation split?)")
	}
	return loss, total, per, nil
}

func (t *trainer) checkpoint(kind string) error {
	start := time.Now()
	if err := t.ml.Sync(); err != nil {
		return err
	}
	t.st.Format = checkpoint.FormatVersion
	t.st.Kind = kind
	t.st.Created = checkpoint.Now()
	t.st.AdamSteps = t.opt.Steps
	t.st.Optimizer = checkpoint.StateOptimizer(t.opt.Name())
	t.st.UpdateNormsRebase = t.opt.RebaseUpdateNorms
	t.st.UpdateNorms, t.st.Losses, t.st.GradNorms = t.opt.UpdateNorms, t.opt.Losses, t.opt.GradNorms
	t.st.Health = checkpointHealth(t.o.Observers, t.st.Step, t.lastEval)
	// The checkpoint's own probe (and output_kl_to_prev), measured before
	// it is written so that state.json records it.
	kl, klOK, probe, err := t.probeKL()
	if err != nil {
		return fmt.Errorf("checkpoint at step %d: probe: %w", t.st.Step, err)
	}
	if !math.IsNaN(probe) {
		t.st.Health.Probe = checkpoint.NumPtr(probe)
	}
	p := &checkpoint.Payload{Tensors: t.ts, Params: t.net.Params(), M: t.opt.M, V: t.opt.V, State: t.st}
	if t.ema != nil {
		p.EMA = t.ema.W
	}
	dir, size, err := checkpoint.Write(t.ckRoot, p)
	if err != nil {
		return err
	}
	failed := t.verifyCheckpoint(dir, p, kind) // ckverify.go
	if failed == "" {
		t.lastCkpt = dir
	}
	t.lastCkptTime = time.Now()
	t.confirmPending(t.st.Step, kind == "final")
	deleted := checkpoint.ApplyKeepPolicy(t.ckRoot, t.o.Checkpoint.Keep, t.log)
	ev := &runlog.Checkpoint{Step: t.st.Step, TokensSeen: t.st.TokensSeen, WallTime: t.st.WallTime, Dir: dir, Kind: kind,
		Seconds: time.Since(start).Seconds(), Bytes: size, Deleted: deleted, OutputKLToPrev: math.NaN(), Failed: failed}
	if klOK {
		ev.OutputKLToPrev = kl
	}
	if err := t.ml.Write(ev); err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	t.pendingCkptTime += ev.Seconds
	t.log.Info("checkpoint", "step", t.st.Step, "kind", kind, "dir", dir, "seconds", fmt.Sprintf("%.2f", ev.Seconds), "deleted", strings.Join(deleted, ","))
	for _, ob := range t.o.Observers {
		if err := ob.OnCheckpoint(ev); err != nil {
			return fmt.Errorf("checkpoint %s: observer: %w", dir, err)
		}
	}
	return nil
}

// resume restores an exact checkpoint of this run.
func (t *trainer) resume(l *checkpoint.Loaded) error {
	var ema []float32
	if t.ema != nil {
		ema = t.ema.W
	}
	if err := restoreExact(l, t.ts, t.net.Params(), t.opt.M, t.opt.V, ema); err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	switch {
	case l.State.ConfigHash == t.o.ConfigHash:
	case l.State.ConfigHash == t.o.Manifest.BaseConfigHash:
		t.log.Info("resuming with the config overrides of the run's interventions (interventions.jsonl)", "interventions", t.o.Manifest.Interventions)
	default:
		t.log.Warn("resuming with a config that differs from the checkpoint's (losses will match an uninterrupted run only if nothing that affects training changed)",
			"checkpoint_hash", short(l.State.ConfigHash), "config_hash", short(t.o.ConfigHash))
	}
	t.restoreState(l.State)
	t.swap = t.swapOptimizer(l.Dir, l.State) // optswap.go
	t.lastCkpt = l.Dir
	t.log.Info("resumed", "dir", l.Dir, "step", l.State.Step, "tokens_seen", l.State.TokensSeen)
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// restoreState takes the counters, windows and EMA state from a checkpoint.
func (t *trainer) restoreState(s checkpoint.State) {
	ws := t.st.WarmStart
	t.st = s
	if t.st.WarmStart == nil {
		t.st.WarmStart = ws
	}
	if t.st.GradClipWindow == nil {
		t.st.GradClipWindow = []bool{}
	}
	t.opt.Steps = s.AdamSteps
	t.opt.RebaseUpdateNorms = s.UpdateNormsRebase
	t.restoreWindows(s)
}

func (t *trainer) restoreWindows(s checkpoint.State) {
	if s.UpdateNorms != nil {
		t.opt.UpdateNorms = fitWindow(s.UpdateNorms, t.o.Optim.UpdateWindow)
	}
	if s.Losses != nil {
		t.opt.Losses = fitWindow(s.Losses, t.o.Optim.SkipWindow)
	}
	if s.GradNorms != nil {
		t.opt.GradNorms = fitWindow(s.GradNorms, t.o.Optim.SkipWindow)
	}
}

// fitWindow re-caps a saved window to the configured size, keeping the newest values.
func fitWindow(w *optim.Window, capacity int) *optim.Window {
	capacity = max(capacity, 2)
	out := optim.NewWindow(capacity)
	vals := w.Vals
	if len(vals) > capacity {
		vals = vals[len(vals)-capacity:]
	}
	for _, v := range vals {
		out.Push(v)
	}
	return out
}

// warmStart initialises from init.from with the configured mode.
func (t *trainer) warmStart() (*checkpoint.WarmStartReport, error) {
	o := t.o
	l, err := checkpoint.Open(o.Init.From, t.log) // a checkpoint, run or "hf:DIR"
	if err != nil {
		return nil, fmt.Errorf("train: init.from: %w", err)
	}
	if err := checkHFMode(l, o.Init.Mode); err != nil {
		return nil, fmt.Errorf("train: init.from: %w", err)
	}
	params := t.net.Params()
	rep := &checkpoint.WarmStartReport{From: l.Dir, Mode: o.Init.Mode, SourceStep: l.State.Step}
	rep.Copied, rep.Initialized, rep.Mismatched, rep.Unused, err = copyMatching(l.Model, "", t.ts, params)
	if err != nil {
		return nil, fmt.Errorf("train: warm-start %s/%s: %w", l.Dir, checkpoint.ModelFile, err)
	}
	if len(rep.Copied) == 0 {
		return nil, fmt.Errorf("train: warm-start from %s: no tensor matches the model by name and shape", l.Dir)
	}
	if t.ema != nil {
		copy(t.ema.W, params)
	}
	if o.Init.Mode != "weights" {
		for _, part := range []struct {
			suffix string
			dst    []float32
		}{{".exp_avg", t.opt.M}, {".exp_avg_sq", t.opt.V}} {
			if _, _, _, _, err := copyMatching(l.Optim, part.suffix, t.ts, part.dst); err != nil {
				return nil, fmt.Errorf("train: warm-start %s/%s: %w", l.Dir, checkpoint.OptimizerFile, err)
			}
		}
		// Moments of tensors that were not copied stay zero.
		for _, name := range append(append([]string{}, rep.Initialized...), mismatchedNames(rep.Mismatched)...) {
			for _, x := range t.ts {
				if x.Name == name {
					clear(t.opt.M[x.Offset : x.Offset+x.Size])
					clear(t.opt.V[x.Offset : x.Offset+x.Size])
				}
			}
		}
		t.opt.Steps = l.State.AdamSteps
		t.restoreWindows(l.State)
	}
	if o.Init.Mode == "full" {
		if t.ema != nil {
			if _, _, _, _, err := copyMatching(l.EMA, "", t.ts, t.ema.W); err != nil {
				return nil, fmt.Errorf("train: warm-start %s/%s: %w", l.Dir, checkpoint.EMAFile, err)
			}
			for _, name := range append(append([]string{}, rep.Initialized...), mismatchedNames(rep.Mismatched)...) {
				for _, x := range t.ts {
					if x.Name == name {
						copy(t.ema.W[x.Offset:x.Offset+x.Size], params[x.Offset:x.Offset+x.Size])
					}
				}
			}
		}
		t.restoreState(l.State)
	}
	if o.Init.Mode != "weights" {
		t.swap = t.swapOptimizer(l.Dir, l.State)
	}
	t.necromancy(l.State, l.Dir)
	t.st.WarmStart = rep
	t.log.Info("warm-start", "from", l.Dir, "mode", rep.Mode, "source_step", rep.SourceStep, "copied", len(rep.Copied),
		"initialized", strings.Join(rep.Initialized, ","), "mismatched", strings.Join(rep.Mismatched, "; "), "unused", strings.Join(rep.Unused, ","))
	return rep, nil
}

func mismatchedNames(ms []string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i], _, _ = strings.Cut(m, ":")
	}
	return out
}
