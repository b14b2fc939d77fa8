// Package replay re-runs parts of a finished or stopped run without
// changing it, to localise a data event: the frozen probe batch on any
// checkpoint (fixed_probe_loss, logit_entropy_probe, topk_mass_probe, to
// compare with the values the run logged), and the batches of a window of
// steps (their loss and gradient norm with one checkpoint's weights, and the
// documents each batch held, by source and id).
//
// The run's data source is rebuilt by run.OpenReplaySource from its
// config.toml with the config overrides of its effective interventions (as
// every start of the trainer applies them) exactly as internal/run builds it
// for training, so this package imports neither the trainer nor the config;
// the loader is a pure function of (config,
// quarantine overlay, seed, step), and step s reads the batch of data step
// s − 1 + offset, the offset being the data steps a rewind skipped before s
// (train.Replayer follows interventions.jsonl as the trainer does), so the
// batch of step s is the batch the trainer read — as long as the dataset's
// quarantine overlay is the one the run trained with (Options.Quarantine,
// and the warning in Result.Warnings when the overlay's hash differs from
// the run manifest's).
package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Options choose what to replay.
type Options struct {
	// Checkpoint is the checkpoint whose weights are used: a checkpoint
	// directory, "step-N" or "N", "last" (the newest valid one) or
	// "last-good"; empty = for Steps the newest checkpoint before the first
	// step, for Probe "last".
	Checkpoint string
	// Probe measures the frozen probe batch.
	Probe bool
	// From, To (1-based metrics steps, inclusive) is the window of steps to
	// replay; From = 0 replays none.
	From, To int
	// Quarantine overrides data.quarantine for the rebuilt data source
	// ("none" = ignore any overlay, to rebuild the batches of a run that
	// trained before documents were quarantined); empty = as the config says.
	Quarantine string
	// Decode adds each replayed row's text, decoded with the run's
	// tokenizer (the dataset's tokenizer.json, or bytes).
	Decode bool
	// Logger receives the loader's warnings (nil = discard).
	Logger *slog.Logger
}

// Result is what a replay measured.
type Result struct {
	Run        string   `json:"run"`
	Checkpoint string   `json:"checkpoint"`
	CkptStep   int      `json:"checkpoint_step"`
	Probe      *Probe   `json:"probe,omitempty"`
	Steps      []Step   `json:"steps,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// Probe is the probe batch measured with the checkpoint's weights, beside
// the values the run logged at the checkpoint's step (NaN when it logged
// none there) and at its last evaluation.
type Probe struct {
	Loss       Float `json:"fixed_probe_loss"`
	Entropy    Float `json:"logit_entropy_probe"`
	TopKMass   Float `json:"topk_mass_probe"`
	Positions  int   `json:"positions"`
	LoggedLoss Float `json:"logged_fixed_probe_loss"` // the run's eval at the checkpoint's step
	LastStep   int   `json:"last_eval_step"`
	LastLoss   Float `json:"last_fixed_probe_loss"` // the run's newest eval ("now")
}

// Step is one replayed step.
type Step struct {
	Step int `json:"step"`
	// DataStep is the data step (1-based) whose batch step Step trained on:
	// Step plus the data steps rewinds skipped before it.
	DataStep       int   `json:"data_step"`
	Batch          int   `json:"batch"`
	Loss           Float `json:"train_loss_raw"`
	GradNorm       Float `json:"grad_global_norm"`
	Tokens         int   `json:"tokens"`
	LoggedLoss     Float `json:"logged_train_loss_raw"`   // NaN when metrics.jsonl has no line for the step
	LoggedGradNorm Float `json:"logged_grad_global_norm"` // NaN likewise
	Rows           []Row `json:"rows,omitempty"`          // dataset runs: where each row came from
}

// Row is one sequence of a replayed batch.
type Row struct {
	Row    int    `json:"row"`
	Source string `json:"source"`
	Epoch  int64  `json:"epoch"`
	Docs   []Doc  `json:"docs"`
	// Text is the row decoded (Options.Decode): its input tokens and the
	// last target, trailing padding left out.
	Text *string `json:"text,omitempty"`
}

// Doc is one document (part) in a row.
type Doc struct {
	Index  int64  `json:"index"` // document index in the source's train split (after quarantine)
	ID     string `json:"id"`    // the upstream id when the dataset knows it
	Offset int64  `json:"offset,omitempty"`
}

// Replay opens the run directory dir read-only and measures what o asks.
func Replay(dir string, o Options) (*Result, error) {
	if !o.Probe && o.From == 0 {
		return nil, errors.New("replay: nothing to do: ask for the probe or a window of steps")
	}
	if o.From != 0 && (o.From < 1 || o.To < o.From) {
		return nil, fmt.Errorf("replay: steps %d:%d: want 1 ≤ A ≤ B", o.From, o.To)
	}
	src, err := run.OpenReplaySource(dir, o.Quarantine)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	ivs := src.Interventions
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	res := &Result{Run: dir}
	spec := o.Checkpoint
	if spec == "" {
		spec = "last"
		if o.From > 0 {
			spec = "before:" + strconv.Itoa(o.From)
		}
	}
	ck, err := resolveCheckpoint(dir, spec)
	if err != nil {
		if o.Checkpoint == "" && o.From > 0 {
			return nil, fmt.Errorf("replay: steps %d:%d: the default checkpoint, the newest before step %d: %w", o.From, o.To, o.From, err)
		}
		return nil, fmt.Errorf("replay: --checkpoint %s: %w", spec, err)
	}
	if err := src.Build(log); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer src.Close()
	if man, err := runlog.ReadManifest(dir); err == nil && o.From > 0 {
		res.Warnings = append(res.Warnings, quarantineWarnings(man, o.From, o.To, src.QuarantineHash)...)
	}
	rp, err := src.Replayer(ck)
	if err != nil {
		return nil, err
	}
	res.Checkpoint, res.CkptStep = rp.Checkpoint().Dir, rp.Checkpoint().State.Step
	if w := rp.OffTrajectory(); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	if o.From > 0 {
		res.Warnings = append(res.Warnings, overrideWarnings(ivs, o.From, o.To)...)
	}
	var dec func([]int32) string
	if o.Decode {
		if dec, err = decoder(src.Tokenizer); err != nil {
			return nil, err
		}
	}
	logged, err := readLogged(rundir.Of(dir).Metrics())
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if o.Probe {
		pm, err := rp.Probe()
		if err != nil {
			return nil, err
		}
		p := &Probe{Loss: Float(pm.Loss), Entropy: Float(pm.Entropy), TopKMass: Float(pm.TopKMass), Positions: pm.Positions, LoggedLoss: Float(math.NaN()), LastLoss: Float(math.NaN())}
		if v, ok := logged.probe[res.CkptStep]; ok {
			p.LoggedLoss = Float(v)
		}
		p.LastStep, p.LastLoss = logged.lastProbeStep, Float(logged.lastProbe)
		res.Probe = p
	}
	l := src.Loader
	for s := o.From; o.From > 0 && s <= o.To; s++ {
		sr, err := rp.Step(s)
		if err != nil {
			return nil, err
		}
		st := Step{Step: s, DataStep: sr.DataIndex + 1, Batch: sr.Batch, Loss: Float(sr.Loss), GradNorm: Float(sr.GradNorm), Tokens: sr.Tokens, LoggedLoss: Float(math.NaN()), LoggedGradNorm: Float(math.NaN())}
		if v, ok := logged.steps[s]; ok {
			st.LoggedLoss, st.LoggedGradNorm = Float(v[0]), Float(v[1])
		}
		if l != nil {
			info, err := l.BatchInfo(sr.DataIndex)
			if err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
			st.Rows = rowsOf(info)
		}
		if dec != nil {
			decodeRows(&st, sr.Inputs, sr.Targets, sr.Sources, dec, src.SeqLen)
		}
		res.Steps = append(res.Steps, st)
	}
	if o.From > 0 && res.CkptStep != o.From-1 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the weights are those after step %d: only a step replayed on the checkpoint of the step before it reproduces the logged loss", res.CkptStep))
	}
	return res, nil
}

// quarantineWarnings says which replayed steps were trained under another
// quarantine overlay than the one the batches are rebuilt with now: step s
// was trained by the last start of the run before it (manifest starts).
func quarantineWarnings(man *runlog.Manifest, from, to int, now string) []string {
	type span struct {
		a, b int
		h    string
	}
	var spans []span
	recorded := false
	for _, st := range man.Starts {
		recorded = recorded || st.QuarantineHash != ""
	}
	for s := from; s <= to; s++ {
		h := ""
		if !recorded {
			h = man.QuarantineHash // starts without it: only the newest overlay is known
		}
		for _, st := range man.Starts {
			if st.Step < s && st.QuarantineHash != "" {
				h = st.QuarantineHash
			}
		}
		if h == "" || h == now {
			continue
		}
		if n := len(spans); n > 0 && spans[n-1].h == h && spans[n-1].b == s-1 {
			spans[n-1].b = s
			continue
		}
		spans = append(spans, span{s, s, h})
	}
	var out []string
	for _, sp := range spans {
		out = append(out, fmt.Sprintf("steps %d:%d were trained with quarantine overlay %s, the batches are rebuilt with %s: they are not the batches trained on (--quarantine none, or the old overlay's path, rebuilds those)",
			sp.a, sp.b, shortHash(sp.h), shortHash(now)))
	}
	return out
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// rowsOf lists a batch's rows with their documents.
func rowsOf(info loader.BatchInfo) []Row {
	var out []Row
	for _, r := range info.Rows {
		row := Row{Row: r.Row, Source: r.Source, Epoch: r.Epoch}
		for _, d := range r.Docs {
			id := d.ID
			if id == "" {
				id = fmt.Sprintf("%s#%d", r.Source, d.Doc)
			}
			row.Docs = append(row.Docs, Doc{Index: d.Doc, ID: id, Offset: d.DocOffset})
		}
		out = append(out, row)
	}
	return out
}

// logged is what metrics.jsonl says about the steps and evaluations.
type logged struct {
	steps         map[int][2]float64 // step → train_loss_raw, grad_global_norm
	probe         map[int]float64    // step → fixed_probe_loss
	lastProbeStep int
	lastProbe     float64
}

func readLogged(path string) (*logged, error) {
	out := &logged{steps: map[int][2]float64{}, probe: map[int]float64{}, lastProbe: math.NaN()}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	rec := runlog.NewRecord()
	for n := 1; sc.Scan(); n++ {
		if err := runlog.ParseLine(sc.Bytes(), rec); err != nil {
			continue // a half-written last line
		}
		if _, ev := rec.Str("event"); ev {
			continue
		}
		sf, ok := rec.Num("step")
		if !ok {
			continue
		}
		s := int(sf)
		if loss, ok := rec.Num("train_loss_raw"); ok {
			g, _ := rec.Num("grad_global_norm")
			out.steps[s] = [2]float64{loss, g}
		}
		if p, ok := rec.Num("fixed_probe_loss"); ok {
			out.probe[s] = p
			if s >= out.lastProbeStep {
				out.lastProbeStep, out.lastProbe = s, p
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// resolveCheckpoint turns a --checkpoint value into a checkpoint directory
// of the run dir: "before:A" (the newest valid checkpoint before step A,
// the default for a window of steps), else what checkpoint.Resolve
// resolves.
func resolveCheckpoint(dir, spec string) (string, error) {
	if a, ok := strings.CutPrefix(spec, "before:"); ok {
		n, err := strconv.Atoi(a)
		if err != nil {
			return "", fmt.Errorf("bad step %q", a)
		}
		d, err := checkpoint.NewestValidAtOrBefore(dir, n-1)
		if err != nil {
			return "", fmt.Errorf("%w (name one with --checkpoint)", err)
		}
		return d, nil
	}
	return checkpoint.Resolve(dir, spec)
}

// WriteJSON prints the result as one indented JSON object; a value not
// measured or not logged (NaN) is written as null. It is a file format
// (kestrel quarantine --from-replay reads it); the table for a person is
// printed by cmd/kestrel/internal/show.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Float is a float64 that encodes NaN and ±Inf as JSON null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}
