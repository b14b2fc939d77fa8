package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/replicas"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Replayer evaluates the weights of one checkpoint of a run on that run's
// batches and on its frozen probe batch, writing nothing: the forward and
// backward passes are the trainer's (same micro-batches, same order of
// accumulation, the same debug corruption, the z-loss of the knob schedule),
// and step s reads the batch the trainer read under the run's effective
// interventions (interventions.jsonl: the data steps a rewind skipped), so
// the loss of step s replayed on the checkpoint of step s−1 is the loss the
// run logged for step s.
type Replayer struct {
	o      Options
	net    Net
	ts     []model.Tensor
	bsched batchsched.Schedule
	mb     int
	ck     *checkpoint.Loaded
	ivs    []runlog.Intervention // the run's effective interventions

	inputs, targets, segIDs []int32
	srcs                    []int
	reps                    *replicas.Set // train.parallel_micro_batches, as the trainer runs it
}

// StepReplay is one replayed step: what the trainer would compute for the
// batch of Step with the checkpoint's weights, before the optimizer runs.
type StepReplay struct {
	Step      int     // the metrics step (1-based)
	DataIndex int     // the 0-based data step index its batch was filled from (Step−1 plus the steps skipped before it)
	Batch     int     // global batch (sequences)
	Loss      float64 // train_loss_raw: the micro-batch-weighted mean cross-entropy
	ZLoss     float64 // z_loss
	GradNorm  float64 // grad_global_norm, before clipping (NaN when the gradient is not finite)
	Tokens    int     // positions the loss counted
	// Inputs and Targets are the batch as the data source filled it
	// (Batch rows of T tokens, before any debug corruption; a target < 0 is
	// padding), and Sources each row's source name.
	Inputs, Targets []int32
	Sources         []string
}

// NewReplayer builds o's network (o.NewNet, else NewModelNet) and loads the
// weights of the checkpoint directory ckptDir into it. Only o.Model, o.Optim,
// o.Train, o.Debug, o.Seed, o.Data and o.Dir are read; the interventions are
// read from o.Dir as the trainer reads them at its start.
func NewReplayer(o Options, ckptDir string) (*Replayer, error) {
	if o.Data == nil {
		return nil, errors.New("replay: no data source")
	}
	if o.Data.SeqLen() != o.Model.SeqLen {
		return nil, fmt.Errorf("replay: data sequence length %d differs from model.seq_len %d", o.Data.SeqLen(), o.Model.SeqLen)
	}
	l, err := checkpoint.Load(ckptDir)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	all, err := runlog.ReadInterventions(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	newNet := o.NewNet
	if newNet == nil {
		newNet = NewModelNet
	}
	net, err := newNet(o.Model, o.Seed)
	if err != nil {
		return nil, fmt.Errorf("replay: model: %w", err)
	}
	if _, err := setPrecision(net, o.Train.Precision); err != nil { // the run's arithmetic, for the same losses
		return nil, fmt.Errorf("replay: %w", err)
	}
	r := &Replayer{o: o, net: net, ts: net.Tensors(), ck: l, ivs: rewind.Effective(all)}
	params := net.Params()
	_, missing, mismatched, _, err := copyMatching(l.Model, "", r.ts, params)
	if err != nil {
		return nil, fmt.Errorf("replay: %s/%s: %w", l.Dir, checkpoint.ModelFile, err)
	}
	if len(missing)+len(mismatched) > 0 {
		return nil, fmt.Errorf("replay: %s/%s does not match the run's model section (missing %v, mismatched %v)", l.Dir, checkpoint.ModelFile, missing, mismatched)
	}
	if r.bsched, err = batchsched.FromConfig("train.batch_schedule", o.Train.BatchSchedule, o.Train.BatchSize); err != nil {
		return nil, err
	}
	if r.mb, err = microBatch(o.Train); err != nil {
		return nil, err
	}
	T := o.Model.SeqLen
	r.inputs, r.targets, r.segIDs = make([]int32, r.mb*T), make([]int32, r.mb*T), make([]int32, r.mb*T)
	r.srcs = make([]int, r.mb)
	r.reps = (&trainer{o: o, net: net, T: T, log: slog.New(slog.DiscardHandler)}).newReplicas(r.mb)
	return r, nil
}

// Checkpoint is the loaded checkpoint (its state.json in checkpoint.State).
func (r *Replayer) Checkpoint() *checkpoint.Loaded { return r.ck }

// Interventions are the run's effective interventions, whose skipped data
// steps the replayed batches follow (rewind.Effective).
func (r *Replayer) Interventions() []runlog.Intervention { return r.ivs }

// OffTrajectory says why the checkpoint's weights are not on the run's
// current trajectory (empty when they are): its state.json records another
// data offset or other interventions than interventions.jsonl gives for its
// step, as for a checkpoint a rewind moved aside, which the trainer would
// refuse to resume.
func (r *Replayer) OffTrajectory() string {
	p := rewind.NewPlan(r.ivs)
	if err := p.OnTrajectory(&r.ck.State); err != nil {
		return err.Error()
	}
	return ""
}

// Step recomputes the loss and the global gradient norm of metrics step s
// (1-based) with the checkpoint's weights, as the trainer's step does before
// its optimizer update; the weights are not changed.
func (r *Replayer) Step(s int) (StepReplay, error) {
	o := r.o
	if s < 1 {
		return StepReplay{}, fmt.Errorf("replay: step %d: steps are numbered from 1", s)
	}
	// The trainer's step: the batch of data step DataIndex (its size
	// included), the z-loss weight of the knobs in force at s.
	idx := rewind.DataIndex(r.ivs, s)
	T := o.Model.SeqLen
	B := r.bsched.At(idx)
	nMicro := (B + r.mb - 1) / r.mb
	out := StepReplay{Step: s, DataIndex: idx, Batch: B, Inputs: make([]int32, 0, B*T), Targets: make([]int32, 0, B*T)}
	names := o.Data.SourceNames()
	if mm := Model(r.net); mm != nil {
		zl := mm.Cfg.ZLoss
		mm.Cfg.ZLoss = o.Optim.KnobsAt(s, o.Model.ZLoss).ZLoss
		defer func() { mm.Cfg.ZLoss = zl }()
	}
	fill := func(k int, buf replicas.Slot) (replicas.Pass, error) {
		r0 := k * r.mb
		n := min(r.mb, B-r0)
		in, tg, sg, sr := buf.Inputs[:n*T], buf.Targets[:n*T], buf.SegIDs[:n*T], buf.Srcs[:n]
		for i := range sr {
			sr[i] = -1
		}
		if err := o.Data.Fill(idx, B, r0, n, in, tg, sg, sr); err != nil {
			return replicas.Pass{}, fmt.Errorf("data step index %d: data: %w", idx, err)
		}
		out.Inputs, out.Targets = append(out.Inputs, in...), append(out.Targets, tg...)
		for _, x := range sr {
			name := ""
			if x >= 0 && x < len(names) {
				name = names[x]
			}
			out.Sources = append(out.Sources, name)
		}
		if o.Debug.Poisoned(idx + 1) { // as the trainer's step does (faults.go)
			faults.PoisonRows(o.Seed, idx+1, r0, T, o.Model.Vocab, in, tg)
		}
		base64Fault(&o, idx+1, r0, T, in, tg)
		b := &model.Batch{B: n, T: T, Inputs: in, Targets: tg}
		if o.Model.DocMask {
			b.SegIDs = sg
		}
		return replicas.Pass{Batch: b, Scale: float32(n) / float32(B)}, nil
	}
	done := func(_ int, p replicas.Pass, st model.Stats, _ *model.Vitals) {
		w := float64(p.Batch.B) / float64(B)
		out.Loss += w * st.Loss
		out.ZLoss += w * st.ZLoss
		out.Tokens += st.Tokens
	}
	if err := r.passes(nMicro, fill, done); err != nil {
		return out, fmt.Errorf("replay: step %d: %w", s, err)
	}
	out.GradNorm = r.gradNorm(out.Loss)
	return out, nil
}

// passes accumulates the gradient of a step's n micro-batches as the
// trainer does: side by side on the replicas (train.parallel_micro_batches),
// else one after the other in the net.
func (r *Replayer) passes(n int, fill replicas.Fill, done replicas.Done) error {
	if r.reps != nil {
		_, err := r.reps.Run(n, fill, done, false)
		return err
	}
	return replicas.Sequential(r.net, replicas.Slot{Inputs: r.inputs, Targets: r.targets, SegIDs: r.segIDs, Srcs: r.srcs}, n, fill, done)
}

// gradNorm is the optimizer's global gradient norm (its fixed chunks, its
// order of summation), computed by a throwaway optimizer on a copy of the
// weights so that nothing of the checkpoint changes.
func (r *Replayer) gradNorm(loss float64) float64 {
	grads := r.net.Grads()
	spans := make([]optim.Span, len(r.ts))
	for i, x := range r.ts {
		spans[i] = optim.Span{Name: x.Name, Offset: x.Offset, Size: x.Size, Kind: x.Kind, Shape: x.Shape}
	}
	cfg := r.o.Optim
	cfg.SkipBadSteps = false
	opt, err := optim.NewAdamW(cfg, len(grads), spans)
	if err != nil {
		return optim.GradNorm(grads)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		loss = 0 // the norm is wanted even when the loss is not finite
	}
	params := append([]float32(nil), r.net.Params()...)
	res, err := opt.Step(params, grads, loss, 0)
	if err != nil {
		return optim.GradNorm(grads)
	}
	return res.GradNorm
}

// Probe measures the run's frozen probe batch (probe.json in o.Dir) with the
// checkpoint's weights: fixed_probe_loss, logit_entropy_probe and
// topk_mass_probe, computed as the trainer's evaluations compute them. The
// probe file is read, never written; a run without one is an error that
// says so.
func (r *Replayer) Probe() (ProbeMetrics, error) {
	path := filepath.Join(r.o.Dir, ProbeFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ProbeMetrics{}, fmt.Errorf("replay: %s: the run has no frozen probe batch (train.probe_sequences = 0, or no validation data)", path)
	}
	if err != nil {
		return ProbeMetrics{}, fmt.Errorf("replay: %w", err)
	}
	p := &probeBatch{}
	if err := json.Unmarshal(b, p); err != nil {
		return ProbeMetrics{}, fmt.Errorf("replay: probe batch %s: %w", path, err)
	}
	if err := p.check(r.o.Model.SeqLen, r.o.Model.Vocab); err != nil {
		return ProbeMetrics{}, fmt.Errorf("replay: probe batch %s: %w", path, err)
	}
	t := &trainer{o: r.o, net: r.net, probe: p, T: r.o.Model.SeqLen}
	pm, _, err := t.probeEval()
	if err != nil {
		return pm, fmt.Errorf("replay: %w", err)
	}
	return pm, nil
}
