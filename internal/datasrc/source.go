// Package datasrc is what the trainer reads batches from: the Source
// interface (batches as a pure function of the step), its optional
// BatchDescriber and MixWeigher method sets, and the byte-level source of
// plain text files (data.kind = "bytes"). The dataset loader implements
// Source without importing the trainer.
package datasrc

// Source is what the trainer reads batches from. Byte-level text files
// (data.kind = "bytes") and prepared datasets (data.kind = "dataset", built by
// internal/data/loader) both implement it. It uses only plain types so that
// the loader need not import the trainer.
//
// Batches are a pure function of the step: Fill for the same arguments must
// always write the same tokens, so resuming needs nothing but the step.
//
// Step numbering: Fill receives the 0-based step index. The trainer's
// optimizer step s — the "step" of metrics.jsonl, counted from 1 — reads
// index s−1, the index the LR and batch schedules take. Config counts
// metrics steps (train.batch_schedule, data.stages[].start_step); see
// package batchsched.
//
// A source may also implement io.Closer (Run closes it when it returns) and
// BatchDescriber.
type Source interface {
	// SeqLen is T, the tokens per sequence (inputs; targets are shifted by one).
	SeqLen() int
	// SourceNames names the sources (one, "train", for a plain text file).
	SourceNames() []string
	// Fill writes rows [row0, row0+n) of the global batch of step index
	// `step` (0-based, see above), whose size is `batch` sequences. Inputs
	// and targets are n·T long; a target < 0 carries no loss (padding) and
	// counts toward pad_fraction. segIDs (n·T) receives document segment ids
	// when not nil; srcs (n) receives each row's source index (into
	// SourceNames) when not nil.
	Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error
	// ValRows is the number of validation sequences of source s.
	ValRows(s int) int
	// FillVal writes validation rows [row0, row0+n) of source s.
	FillVal(s, row0, n int, inputs, targets, segIDs []int32) error
}

// BatchDescriber is an optional Source method set: a human-readable
// account of which documents (ids, sources, offsets) a step's batch holds,
// for spike reports. step is the 0-based index passed to Fill. The dataset
// loader implements it.
type BatchDescriber interface {
	DescribeStep(step int) (string, error)
}

// DescribeBatch describes the batch of metrics step `step` (1-based, as in
// metrics.jsonl) when d implements BatchDescriber; ok is false when it does
// not.
func DescribeBatch(d Source, step int) (desc string, ok bool, err error) {
	bd, ok := d.(BatchDescriber)
	if !ok {
		return "", false, nil
	}
	desc, err = bd.DescribeStep(step - 1)
	return desc, true, err
}

// MixWeigher is an optional Source method set: the mixture weights
// (one per SourceNames entry, any scale) of the data stage in force at the
// 0-based step index step (as in Fill). The dataset loader implements it.
// With it, val_loss is the validation loss of the mixture the run trains
// on; without it, the token-weighted mean over every source.
type MixWeigher interface {
	MixWeights(step int) []float64
}

// MixStager is an optional Source method set: which data stage is in force
// at the 0-based step index step (as in Fill) — entry 0 for the first
// mixture (data.sources), i+1 for data.stages[i] — and, inside that
// stage's ramp (its interpolated steps, before its own weights are in
// force), the ramp's progress a = (j+1)/ramp_steps of its j-th step; ramp
// is 0 outside a ramp. The trainer logs them (data_stage_entry,
// data_stage_ramp), so the dashboard marks each stage's start and the end
// of its ramp. The dataset loader implements it.
type MixStager interface {
	MixStage(step int) (entry int, ramp float64)
}
