package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
)

// StepMetrics is one line of metrics.jsonl per optimizer step. Names follow
// the seed-004 catalog (docs/metrics.md); times are seconds.
type StepMetrics struct {
	Step       int     `json:"step"`
	TokensSeen int64   `json:"tokens_seen"`
	WallTime   float64 `json:"wall_time"` // seconds of training since the run began (summed over resumes)
	UnixTime   float64 `json:"unix_time"`

	TrainLossRaw float64 `json:"train_loss_raw"` // mean cross-entropy of this step's batch (nats/token)
	TrainLossEMA float64 `json:"train_loss_ema"` // bias-corrected EMA of train_loss_raw
	ZLoss        float64 `json:"z_loss"`         // mean z-loss term of the batch

	LearningRate float64 `json:"learning_rate"` // the LR applied (after batch scaling and debug factors)
	LRPhase      string  `json:"lr_phase"`      // warmup | rewarm | stable | decay | constant | stepN
	LRCycle      int     `json:"lr_cycle"`      // re-warmup cycle index
	BatchSize    int     `json:"batch_size"`    // global batch in sequences
	MicroBatches int     `json:"micro_batches"` // forward/backward passes accumulated

	GradGlobalNorm      float64  `json:"grad_global_norm"`                // before clipping
	GradClipped         bool     `json:"grad_clipped"`                    // grad norm was clipped to max_grad_norm
	UpdateNorm          float64  `json:"update_norm"`                     // AdamW direction + decay, before update clipping
	UpdateNormPostClip  float64  `json:"update_norm_post_clip"`           // after update clipping
	UpdateClipThreshold *float64 `json:"update_clip_threshold,omitempty"` // active threshold (absent while update clipping is inactive)
	UpdateToWeight      float64  `json:"update_to_weight"`                // lr·‖update‖/‖θ‖
	ParamNorm           float64  `json:"param_norm"`
	Clipped             bool     `json:"clipped"` // the update was clipped
	Skipped             bool     `json:"skipped"` // the step was skipped as an outlier
	SkipReason          string   `json:"skip_reason,omitempty"`
	SkippedUpdates      int      `json:"skipped_updates"` // cumulative
	ClippedUpdates      int      `json:"clipped_updates"` // cumulative update clips
	GradClipRate        float64  `json:"grad_clip_rate"`  // fraction of the last 100 steps with grad clipping
	NaNInfEvents        int      `json:"nan_inf_events"`

	TokensPerSec        float64 `json:"tokens_per_sec"`
	StepTime            float64 `json:"step_time"` // wall time since the previous step line
	DataWaitTime        float64 `json:"data_wait_time"`
	ForwardTime         float64 `json:"forward_time"`  // forward passes incl. the loss head, all micro-batches
	BackwardTime        float64 `json:"backward_time"` // backward passes, all micro-batches
	OptimizerTime       float64 `json:"optimizer_time"`
	CheckpointTime      float64 `json:"checkpoint_time"`       // checkpoint writes since the previous step line
	EvalTime            float64 `json:"eval_time"`             // evaluation since the previous step line
	DataloaderStallFrac float64 `json:"dataloader_stall_frac"` // data_wait_time / step_time
	PadFraction         float64 `json:"pad_fraction"`          // targets < 0 (no loss) / all target positions of the batch
	MFU                 float64 `json:"mfu"`

	MaxAttnLogit          float64 `json:"max_attn_logit"`          // max over layers and heads
	AttnEntropy           float64 `json:"attn_entropy"`            // min over layers and heads (worst)
	ResidualRMS           float64 `json:"residual_rms"`            // max over layers
	ActivationOutlierRate float64 `json:"activation_outlier_rate"` // max over layers
	LogitLSEMean          float64 `json:"logit_lse_mean"`

	// PerLayer holds the per-layer/head vitals under names such as
	// "max_attn_logit/layer3/head1"; they are written as top-level keys.
	PerLayer map[string]float64 `json:"-"`
	// SourceMixShare is the share of this step's sequences from each source
	// (by DataSource.SourceNames), written as "source_mix_share/<source>".
	SourceMixShare map[string]float64 `json:"-"`
	// Spans are the measured phases of the step in order (data_wait,
	// forward and backward per micro-batch, then optimizer), for trace.json.
	Spans []Span `json:"-"`
}

// Span is one measured phase of a step.
type Span struct {
	Name  string
	Start time.Time
	Dur   time.Duration
}

// MarshalJSON writes the struct fields and then the keys of SourceMixShare
// ("source_mix_share/<source>") and PerLayer (all sorted) as one flat
// object; NaN and ±Inf become null.
func (m StepMetrics) MarshalJSON() ([]byte, error) {
	type plain StepMetrics
	c := plain(m)
	for _, f := range []*float64{&c.TrainLossRaw, &c.TrainLossEMA, &c.ZLoss, &c.GradGlobalNorm, &c.UpdateNorm,
		&c.UpdateNormPostClip, &c.UpdateToWeight, &c.ParamNorm, &c.MaxAttnLogit, &c.AttnEntropy,
		&c.ResidualRMS, &c.ActivationOutlierRate, &c.LogitLSEMean, &c.TokensPerSec, &c.MFU, &c.LearningRate} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = -1 // never emitted for a committed step; guards the encoder
		}
	}
	b, err := json.Marshal(c)
	if err != nil || len(m.PerLayer)+len(m.SourceMixShare) == 0 {
		return b, err
	}
	flat := make(map[string]float64, len(m.PerLayer)+len(m.SourceMixShare))
	for k, v := range m.SourceMixShare {
		flat["source_mix_share/"+k] = v
	}
	for k, v := range m.PerLayer {
		flat[k] = v
	}
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = b[:len(b)-1]
	for _, k := range keys {
		b = append(b, ',')
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = appendNum(b, flat[k])
	}
	return append(b, '}'), nil
}

func appendNum(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// EvalMetrics is one evaluation line of metrics.jsonl.
type EvalMetrics struct {
	Step        int     `json:"step"`
	TokensSeen  int64   `json:"tokens_seen"`
	WallTime    float64 `json:"wall_time"`
	ValLoss     float64 `json:"val_loss"`      // raw weights (nats/token)
	ValLossEMA  float64 `json:"val_loss_ema"`  // EMA weights (0 when EMA is off)
	EMAGap      float64 `json:"ema_gap"`       // val_loss − val_loss_ema
	TrainValGap float64 `json:"train_val_gap"` // val_loss − train_loss_ema
	ValTokens   int     `json:"val_tokens"`
	EvalTime    float64 `json:"eval_time"`
	// Probe-batch measurements (0 and omitted when the run has no probes).
	FixedProbeLoss    float64            `json:"fixed_probe_loss,omitempty"`
	LogitEntropyProbe float64            `json:"logit_entropy_probe,omitempty"`
	TopKMassProbe     float64            `json:"topk_mass_probe,omitempty"`
	SliceValLoss      map[string]float64 `json:"-"` // "slice_val_loss/<source>" for multi-source data
}

// MarshalJSON flattens SliceValLoss into top-level keys.
func (e EvalMetrics) MarshalJSON() ([]byte, error) {
	type plain EvalMetrics
	b, err := json.Marshal(plain(e))
	if err != nil || len(e.SliceValLoss) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(e.SliceValLoss))
	for k := range e.SliceValLoss {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = b[:len(b)-1]
	for _, k := range keys {
		b = append(b, ',')
		b = strconv.AppendQuote(b, "slice_val_loss/"+k)
		b = append(b, ':')
		b = appendNum(b, e.SliceValLoss[k])
	}
	return append(b, '}'), nil
}

// CheckpointEvent reports a committed checkpoint.
type CheckpointEvent struct {
	Step    int     `json:"step"`
	Dir     string  `json:"dir"`
	Kind    string  `json:"kind"` // rolling | permanent | final | interrupt | time_limit
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	// OutputKLToPrev is output_kl_to_prev on the probe batch against the
	// previous checkpoint (nil when there is none to compare or no probes).
	OutputKLToPrev *float64 `json:"output_kl_to_prev,omitempty"`
	Deleted        []string `json:"deleted,omitempty"` // rolling checkpoints removed by the keep policy
}

// Observer receives every step, evaluation and checkpoint (the monitor
// implements it). An error from OnStep stops the run without writing a new
// checkpoint, so the last good one stays the newest.
type Observer interface {
	OnStep(StepMetrics) error
	OnEval(EvalMetrics) error
	OnCheckpoint(CheckpointEvent) error
}

// metricsLog appends JSON lines to metrics.jsonl.
type metricsLog struct {
	f *os.File
	w *bufio.Writer
}

func openMetricsLog(path string) (*metricsLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &metricsLog{f: f, w: bufio.NewWriter(f)}, nil
}

func (l *metricsLog) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	l.w.Write(b)
	l.w.WriteByte('\n')
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("metrics: %s: %w", l.f.Name(), err)
	}
	return nil
}

func (l *metricsLog) sync() error {
	if err := l.w.Flush(); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *metricsLog) close() error {
	if err := l.w.Flush(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}

// truncateMetrics keeps only the lines of path whose "step" is <= step
// (lines written after the checkpoint a resume starts from are dropped, so
// the file reads as one uninterrupted run). Unparseable lines are kept.
func truncateMetrics(path string, step int) (dropped int, err error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var head struct {
			Step *int `json:"step"`
		}
		if json.Unmarshal(line, &head) == nil && head.Step != nil && *head.Step > step {
			dropped++
			continue
		}
		if line[len(line)-1] != '\n' { // a torn last line from a crash
			dropped++
			continue
		}
		out.Write(line)
	}
	if dropped == 0 {
		return 0, nil
	}
	return dropped, atomicfile.WriteFile(path, out.Bytes())
}
