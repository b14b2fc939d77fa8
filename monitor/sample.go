package monitor

import (
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Sample is what a trainer (or a log reader) hands the monitor once per
// optimizer step: the x-axes and a flat map of metric values named as in the
// registry (per-layer/head variants as "max_attn_logit/layer3/head1").
type Sample struct {
	Step   int64              `json:"step"`
	Tokens int64              `json:"tokens_seen"`
	Time   time.Time          `json:"time"`
	Values map[string]float64 `json:"values"`
	// Batch optionally names what this step trained on, for incident
	// bundles and the spike classifier's "data event" verdict.
	Batch *Batch `json:"batch,omitempty"`
	// Phases optionally decomposes the step's wall time (data wait,
	// forward, backward, optimizer, checkpoint, eval) for trace.json.
	Phases []Phase `json:"phases,omitempty"`
	// Ops optionally holds the model's per-op spans of a traced step
	// (layer3/attention, layer3/qkv_gemm, lm_head …), each inside one of
	// Phases (forward or backward), nested by time; for trace.json.
	Ops []Phase `json:"ops,omitempty"`
	// Histograms optionally carries per-layer value histograms (written to
	// TensorBoard) and token histograms (for token_kl_drift, key "tokens").
	Histograms map[string]Histogram `json:"-"`
}

// Batch describes one step's batch: the sources and document ids it holds.
type Batch struct {
	IDs     []string `json:"ids,omitempty"`
	Sources []string `json:"sources,omitempty"`
	DocIDs  []string `json:"doc_ids,omitempty"`
}

// Phase is one timed part of a step.
type Phase struct {
	Name  string        `json:"name"` // data_wait, forward, backward, optimizer, checkpoint, eval
	Start time.Time     `json:"start"`
	Dur   time.Duration `json:"dur"`
}

// Histogram is a bucketed distribution: Counts[i] values fell in
// [Edges[i], Edges[i+1]) (len(Edges) = len(Counts)+1), or, when Edges is
// empty, Counts[i] is the count of category i (e.g. a token id).
type Histogram struct {
	Edges  []float64
	Counts []float64
	Min    float64
	Max    float64
	Sum    float64
	SumSq  float64
}

// Total is the number of values in h.
func (h Histogram) Total() float64 {
	var t float64
	for _, c := range h.Counts {
		t += c
	}
	return t
}

// Event kinds the monitor understands.
const (
	EventCheckpoint = runlog.EventCheckpoint // OK false = save or verification failed
	EventEval       = runlog.EventEval       // Values carry val_loss, slice_val_loss/<src>, probes
	EventResume     = runlog.EventResume     // Detail: manifest path of the resumed run
	EventNote       = runlog.EventNote       // anything else worth marking
)

// Event is something that is not a per-step sample: a checkpoint (and
// whether it succeeded), an evaluation, a resume.
type Event = runlog.Event

// Severity is an alert level: SEV0 pauses the run, SEV1 asks for quick
// containment, SEV2 for investigation.
type Severity = runlog.Severity

// The three severities of seed 004.
const (
	SEV0 = runlog.SEV0
	SEV1 = runlog.SEV1
	SEV2 = runlog.SEV2
)

// Alert is one fired rule, as written to alerts.jsonl.
type Alert = runlog.Alert

// unix is t in Unix seconds (0 for the zero time).
func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
