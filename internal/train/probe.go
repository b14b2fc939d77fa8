package train

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/stepvitals"
)

// ProbeFile is the frozen probe batch of a run, in the run directory.
const ProbeFile = rundir.ProbeName

// probeKLPositions caps the positions whose output distributions are kept
// between checkpoints for output_kl_to_prev (positions × vocab floats).
const probeKLPositions = 256

// probeTopK is the k of topk_mass_probe.
const probeTopK = 10

// probeBatch is the frozen probe batch: validation sequences picked once, at
// the start of a run, and stored in the run directory so that every later
// evaluation (and every resume) measures the same tokens. Its hash goes into
// manifest.json.
type probeBatch struct {
	Format  int      `json:"format"`
	B       int      `json:"sequences"`
	T       int      `json:"seq_len"`
	Sources []string `json:"sources"` // per sequence
	Inputs  []int32  `json:"inputs"`
	Targets []int32  `json:"targets"`
	SegIDs  []int32  `json:"seg_ids"`
	SHA256  string   `json:"sha256"` // of the token arrays, see hash

	// The output distributions at the last checkpoint (log-probabilities
	// at klPos), for output_kl_to_prev.
	prevLogP []float32
	klPos    []int
}

// hash is the SHA-256 of B, T and the three token arrays as little-endian
// int32s.
func (p *probeBatch) hash() string {
	h := sha256.New()
	var buf [4]byte
	for _, x := range []int{p.B, p.T} {
		binary.LittleEndian.PutUint32(buf[:], uint32(x))
		h.Write(buf[:])
	}
	for _, arr := range [][]int32{p.Inputs, p.Targets, p.SegIDs} {
		for _, x := range arr {
			binary.LittleEndian.PutUint32(buf[:], uint32(x))
			h.Write(buf[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// setupProbe loads the run's probe batch, or picks and writes one on a
// fresh run: up to train.probe_sequences validation sequences, taken in turn
// from each source with validation data and spread over its split. A run
// without validation data, or with probe_sequences = 0, has no probes.
func (t *trainer) setupProbe() error {
	n := t.o.Train.ProbeSequences
	if n == 0 {
		return nil
	}
	path := filepath.Join(t.o.Dir, ProbeFile)
	if b, err := os.ReadFile(path); err == nil {
		p := &probeBatch{}
		if err := json.Unmarshal(b, p); err != nil {
			return fmt.Errorf("probe batch %s: %w (delete it to pick a new one; the probe metrics then restart)", path, err)
		}
		if err := p.check(t.T, t.o.Model.Vocab); err != nil {
			return fmt.Errorf("probe batch %s: %w (delete it to pick a new one; the probe metrics then restart)", path, err)
		}
		t.probe = p
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("probe batch: %w", err)
	}
	d := t.o.Data
	names := d.SourceNames()
	var srcs []int
	for s := range names {
		if d.ValRows(s) > 0 {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		t.log.Info("no validation data: probe metrics are off")
		return nil
	}
	p := &probeBatch{Format: 1, B: n, T: t.T, Inputs: make([]int32, n*t.T), Targets: make([]int32, n*t.T), SegIDs: make([]int32, n*t.T)}
	per := (n + len(srcs) - 1) / len(srcs) // sequences per source
	for i := 0; i < n; i++ {
		s := srcs[i%len(srcs)]
		row := (i / len(srcs)) * d.ValRows(s) / per
		sl := p.Inputs[i*t.T : (i+1)*t.T]
		if err := d.FillVal(s, row, 1, sl, p.Targets[i*t.T:(i+1)*t.T], p.SegIDs[i*t.T:(i+1)*t.T]); err != nil {
			return fmt.Errorf("probe batch: source %s row %d: %w", names[s], row, err)
		}
		p.Sources = append(p.Sources, names[s])
	}
	p.SHA256 = p.hash()
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("probe batch: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("probe batch: %w", err)
	}
	t.probe = p
	return nil
}

// check validates a probe batch read from disk against the run.
func (p *probeBatch) check(T, vocab int) error {
	switch {
	case p.Format != 1:
		return fmt.Errorf("format %d, want 1", p.Format)
	case p.T != T:
		return fmt.Errorf("seq_len %d, but the run has model.seq_len %d", p.T, T)
	case p.B <= 0 || len(p.Inputs) != p.B*p.T || len(p.Targets) != p.B*p.T || len(p.SegIDs) != p.B*p.T:
		return fmt.Errorf("%d sequences of %d tokens do not match inputs/targets/seg_ids of lengths %d/%d/%d", p.B, p.T, len(p.Inputs), len(p.Targets), len(p.SegIDs))
	case p.hash() != p.SHA256:
		return fmt.Errorf("sha256 %s does not match its tokens (%s): the file was changed", p.SHA256, p.hash())
	}
	for i, x := range p.Inputs {
		if x < 0 || int(x) >= vocab {
			return fmt.Errorf("inputs[%d] = %d outside the vocabulary [0, %d)", i, x, vocab)
		}
	}
	for i, x := range p.Targets {
		if int(x) >= vocab {
			return fmt.Errorf("targets[%d] = %d outside the vocabulary [0, %d)", i, x, vocab)
		}
	}
	return nil
}

// probeOutputs runs the current weights on the probe batch and returns the
// loss and, when the network exposes them, the logits and logsumexps.
func (t *trainer) probeOutputs() (model.Stats, []float32, []float32, error) {
	p := t.probe
	b := &model.Batch{B: p.B, T: p.T, Inputs: p.Inputs, Targets: p.Targets}
	if t.o.Model.DocMask {
		b.SegIDs = p.SegIDs
	}
	st, err := t.net.Forward(b)
	if err != nil {
		return st, nil, nil, fmt.Errorf("probe batch: %w", err)
	}
	if on, ok := t.net.(interface{ Outputs() ([]float32, []float32) }); ok {
		z, lse := on.Outputs()
		return st, z, lse, nil
	}
	return st, nil, nil, nil
}

// ProbeMetrics are the fixed-probe-batch measurements of one evaluation.
type ProbeMetrics struct {
	Loss      float64 // fixed_probe_loss: mean cross-entropy (nats/token)
	Entropy   float64 // logit_entropy_probe: mean entropy of the output distribution (nats)
	TopKMass  float64 // topk_mass_probe: mean probability of the probeTopK most likely tokens
	Positions int     // positions measured
}

// probeEval measures the probe batch with the current weights. ok is false
// when the run has no probe batch.
func (t *trainer) probeEval() (pm ProbeMetrics, ok bool, err error) {
	if t.probe == nil {
		return pm, false, nil
	}
	st, z, lse, err := t.probeOutputs()
	if err != nil {
		return pm, false, err
	}
	pm.Loss = st.Loss
	pm.Entropy, pm.TopKMass = math.NaN(), math.NaN()
	if z == nil {
		return pm, true, nil
	}
	V := t.o.Model.Vocab
	var ent, mass float64
	n := 0
	top := make([]float32, probeTopK)
	for i, y := range t.probe.Targets {
		if y < 0 {
			continue
		}
		e, m := stepvitals.EntropyTopK(z[i*V:(i+1)*V], lse[i], top)
		ent += e
		mass += m
		n++
	}
	if n > 0 {
		pm.Entropy, pm.TopKMass, pm.Positions = ent/float64(n), mass/float64(n), n
	}
	return pm, true, nil
}

// probeKL computes output_kl_to_prev at a checkpoint: the mean over probe
// positions of KL(p_now ‖ p_prev), where p_prev is the output distribution
// at the previous checkpoint (or at the resumed checkpoint); it then keeps
// p_now for the next one. ok is false when there is nothing to compare yet.
// loss is fixed_probe_loss on the current weights (NaN without a probe
// batch): the checkpoint's own probe, which confirmation compares.
func (t *trainer) probeKL() (kl float64, ok bool, loss float64, err error) {
	p := t.probe
	if p == nil {
		return 0, false, math.NaN(), nil
	}
	st, z, lse, err := t.probeOutputs()
	if err != nil {
		return 0, false, math.NaN(), err
	}
	loss = st.Loss
	if z == nil {
		return 0, false, loss, nil
	}
	V := t.o.Model.Vocab
	if p.klPos == nil {
		var counted []int
		for i, y := range p.Targets {
			if y >= 0 {
				counted = append(counted, i)
			}
		}
		k := min(len(counted), probeKLPositions)
		for j := 0; j < k; j++ {
			p.klPos = append(p.klPos, counted[j*len(counted)/k])
		}
	}
	cur := make([]float32, len(p.klPos)*V)
	for j, i := range p.klPos {
		row, out := z[i*V:(i+1)*V], cur[j*V:(j+1)*V]
		for v, x := range row {
			out[v] = x - lse[i]
		}
	}
	prev := p.prevLogP
	p.prevLogP = cur
	if prev == nil || len(p.klPos) == 0 {
		return 0, false, loss, nil
	}
	var sum float64
	for j := range p.klPos {
		a, b := cur[j*V:(j+1)*V], prev[j*V:(j+1)*V]
		var k float64
		for v := range a {
			lp := float64(a[v])
			k += math.Exp(lp) * (lp - float64(b[v]))
		}
		sum += max(k, 0) // rounding can leave a tiny negative
	}
	return sum / float64(len(p.klPos)), true, loss, nil
}
