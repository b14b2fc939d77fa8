// Package loader turns token sources into batches: mixture by source with
// stages, Feistel (or LCG) permutation, packing with document boundaries,
// and batch(step) as a pure function of (dataset, config, seed, step).
//
// How a step's batch is found (every arrow is a pure function):
//
//	step ──batch schedule──▶ global sequence indices g = FirstSeq(step) … +batch
//	g ──stage of g, block b = local/K, offset o──▶ keyed permutation of the block's
//	     K positions, each owned by a source (⌊w·K⌋ positions per source,
//	     remainder to the heaviest) ──▶ (source s, j-th sequence of s)
//	     (inside a stage's ramp_steps, each step is one block of its batch
//	     with the interpolated weights; rampStages, rampCounts)
//	j ──epoch e = j / slots(s)──▶ slot = PRP_{seed, s, e}(j mod slots(s))
//	slot ──packing──▶ seq_len+1 tokens, segment ids, document ids
package loader

import (
	"fmt"
	"math"
)

// Config is the [data] section of a run config.
type Config struct {
	Kind  string `toml:"kind" comment:"bytes = train on a plain text file at byte level (vocab 256); dataset = a directory made by kestrel prepare"`
	Train string `toml:"train" comment:"bytes mode: training text file"`
	Val   string `toml:"val" comment:"bytes mode: validation text file (empty = hold out val_fraction of train)"`
	Path  string `toml:"path" comment:"dataset mode: directory written by kestrel prepare"`

	Seed          uint64         `toml:"seed" comment:"dataset mode: data-order seed (0 = derive from run.seed)"`
	Permutation   string         `toml:"permutation" comment:"dataset mode: shuffle of each source's sequences and of each mixing block: feistel | lcg (the affine shuffle, for comparison)"`
	FeistelRounds int            `toml:"feistel_rounds" comment:"dataset mode: rounds of the Feistel permutation"`
	FeistelRound  string         `toml:"feistel_round" comment:"dataset mode: Feistel round function: mix = SplitMix64 finaliser of R xor k (non-linear; batches measure as i.i.d. in kestrel data shuffle-report); mul = Levanter's affine (R·2654435761 + k) mod 2^w (leaves batch-composition autocorrelation up to ~0.6 at lag 2 in the mixing blocks)"`
	LCGStride     int64          `toml:"lcg_stride" comment:"dataset mode, permutation = lcg: multiplier a of (a·x+b) mod N (0 = drawn from the seed; a small stride reproduces Marin's phases)"`
	Packing       string         `toml:"packing" comment:"dataset mode: concat = seq_len+1 windows cut from each source's token stream, documents packed with segment ids; bos = every sequence starts at a document start, truncated or padded (padded targets are -1 and count toward pad_fraction)"`
	MixBlock      int            `toml:"mix_block" comment:"dataset mode: sequences per mixing block; each block holds floor(w·K) sequences of every source, the remainder going to the heaviest (Levanter's block-wise mixing)"`
	Sources       []SourceConfig `toml:"sources" comment:"dataset mode: mixture from step 0, as [{name, weight, max_epochs}]; empty = every source of the dataset, weighted by its train tokens"`
	Stages        []Stage        `toml:"stages" comment:"dataset mode: later mixtures, as [{start_step, weights = {source = w}, ramp_steps}]; sources not named get weight 0; ramp_steps = N > 1 moves the weights linearly from the mixture before over N steps, these weights in force from start_step+N−1, which must be before the next stage (0 or 1 = switch at start_step)"`
	Prefetch      int            `toml:"prefetch" comment:"dataset mode: batches prepared ahead by a background goroutine (0 = none)"`
	ValMaxSeqs    int            `toml:"val_max_seqs" comment:"dataset mode: validation sequences per source (0 = all)"`
	Quarantine    string         `toml:"quarantine" comment:"dataset mode: quarantine overlay of documents and shards left out of training (see kestrel quarantine): empty = the dataset's quarantine.json when it exists; none = no overlay; else a file path. Changing it changes the data order from step 1 (docs/rescue.md)"`
}

// SourceConfig is one source of the step-0 mixture.
type SourceConfig struct {
	Name      string  `toml:"name" comment:"source tag from the dataset manifest"`
	Weight    float64 `toml:"weight" comment:"mixture weight (weights are normalised)"`
	MaxEpochs float64 `toml:"max_epochs" comment:"refuse to read more than this many passes over the source (0 = no limit); every repetition is logged"`
}

// Stage switches the mixture at a step (e.g. a cooldown mix), at once or
// over a linear ramp from the mixture before it.
type Stage struct {
	StartStep int                `toml:"start_step" comment:"first step of this mixture, a metrics step: numbered from 1 as the \"step\" of metrics.jsonl and the logs, like train.batch_schedule"`
	Weights   map[string]float64 `toml:"weights" comment:"source = weight (normalised); sources not named get 0"`
	RampSteps int                `toml:"ramp_steps" comment:"steps over which the weights move linearly from the mixture before (the previous stage's, or data.sources') to these: step start_step+j uses (1−a)·previous + a·weights with a = (j+1)/ramp_steps, each ramp step mixing its own batch; these weights are in force from start_step+ramp_steps−1 on, which must be before the next stage's start_step. 0 or 1 = switch at start_step"`
}

// MaxRampSteps bounds data.stages[].ramp_steps (the loader keeps a few
// numbers per source for every ramp step).
const MaxRampSteps = 100_000

// DefaultConfig returns the defaults of the [data] section.
func DefaultConfig() Config {
	return Config{
		Kind:          "bytes",
		Train:         "${KESTREL_DATA}/tinyshakespeare/input.txt",
		Permutation:   PermFeistel,
		FeistelRounds: 5,
		FeistelRound:  RoundMix,
		Packing:       PackConcat,
		MixBlock:      1024,
		Prefetch:      2,
	}
}

// Packing modes.
const (
	PackConcat = "concat"
	PackBOS    = "bos"
)

// validate checks the dataset-mode fields, naming the offending one.
func (c Config) validate() error {
	switch c.Permutation {
	case PermFeistel, PermLCG:
	default:
		return fmt.Errorf("data.permutation = %q: want %q or %q", c.Permutation, PermFeistel, PermLCG)
	}
	if c.FeistelRounds < 0 || c.FeistelRounds > maxRounds {
		return fmt.Errorf("data.feistel_rounds = %d: want 1..%d (0 = 5)", c.FeistelRounds, maxRounds)
	}
	switch c.FeistelRound {
	case RoundMul, RoundMix, "":
	default:
		return fmt.Errorf("data.feistel_round = %q: want %q or %q", c.FeistelRound, RoundMul, RoundMix)
	}
	if c.LCGStride < 0 {
		return fmt.Errorf("data.lcg_stride = %d: must be ≥ 0", c.LCGStride)
	}
	switch c.Packing {
	case PackConcat, PackBOS:
	default:
		return fmt.Errorf("data.packing = %q: want %q or %q", c.Packing, PackConcat, PackBOS)
	}
	if c.MixBlock < 1 || c.MixBlock > 1<<24 {
		return fmt.Errorf("data.mix_block = %d: want 1..%d", c.MixBlock, 1<<24)
	}
	if c.Prefetch < 0 || c.Prefetch > 64 {
		return fmt.Errorf("data.prefetch = %d: want 0..64", c.Prefetch)
	}
	if c.ValMaxSeqs < 0 {
		return fmt.Errorf("data.val_max_seqs = %d: must be ≥ 0", c.ValMaxSeqs)
	}
	seen := map[string]bool{}
	for i, s := range c.Sources {
		if s.Name == "" {
			return fmt.Errorf("data.sources[%d]: name is empty", i)
		}
		if seen[s.Name] {
			return fmt.Errorf("data.sources[%d]: source %q listed twice", i, s.Name)
		}
		seen[s.Name] = true
		if s.Weight < 0 || math.IsNaN(s.Weight) || math.IsInf(s.Weight, 0) {
			return fmt.Errorf("data.sources[%d] (%s): weight %v must be a finite number ≥ 0", i, s.Name, s.Weight)
		}
		if s.MaxEpochs < 0 || math.IsNaN(s.MaxEpochs) {
			return fmt.Errorf("data.sources[%d] (%s): max_epochs %v must be ≥ 0", i, s.Name, s.MaxEpochs)
		}
	}
	prev := 0
	for i, st := range c.Stages {
		if st.StartStep <= prev {
			return fmt.Errorf("data.stages[%d]: start_step %d must be > %d (stages are in increasing step order after step 0)", i, st.StartStep, prev)
		}
		prev = st.StartStep
		if st.RampSteps < 0 || st.RampSteps > MaxRampSteps {
			return fmt.Errorf("data.stages[%d].ramp_steps = %d: want 0..%d", i, st.RampSteps, MaxRampSteps)
		}
		if i+1 < len(c.Stages) && st.RampSteps > 1 && st.StartStep+st.RampSteps-1 >= c.Stages[i+1].StartStep {
			return fmt.Errorf("data.stages[%d].ramp_steps = %d: the ramp from step %d reaches its weights at step %d, not before data.stages[%d].start_step = %d (at most %d)",
				i, st.RampSteps, st.StartStep, st.StartStep+st.RampSteps-1, i+1, c.Stages[i+1].StartStep, c.Stages[i+1].StartStep-st.StartStep)
		}
		for name, w := range st.Weights {
			if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
				return fmt.Errorf("data.stages[%d].weights.%s = %v: must be a finite number ≥ 0", i, name, w)
			}
		}
	}
	return nil
}
