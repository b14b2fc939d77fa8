package train

import (
	"fmt"
	"strings"
)

// DataSource is what the trainer reads batches from. Byte-level text files
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
type DataSource interface {
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

// BatchDescriber is an optional DataSource method set: a human-readable
// account of which documents (ids, sources, offsets) a step's batch holds,
// for spike reports. step is the 0-based index passed to Fill. The dataset
// loader implements it.
type BatchDescriber interface {
	DescribeStep(step int) (string, error)
}

// DescribeBatch describes the batch of metrics step `step` (1-based, as in
// metrics.jsonl) when d implements BatchDescriber; ok is false when it does
// not.
func DescribeBatch(d DataSource, step int) (desc string, ok bool, err error) {
	bd, ok := d.(BatchDescriber)
	if !ok {
		return "", false, nil
	}
	desc, err = bd.DescribeStep(step - 1)
	return desc, true, err
}

// checkValData refuses a data source without validation rows: every run
// evaluates (every train.eval_every steps, and at its last step even with
// eval_every = 0), and would otherwise train until its first evaluation and
// fail there.
func checkValData(o Options) error {
	names := o.Data.SourceNames()
	for s := range names {
		if o.Data.ValRows(s) > 0 {
			return nil
		}
	}
	when := fmt.Sprintf("its first evaluation at step %d", min(o.Train.EvalEvery, o.Train.Steps))
	if o.Train.EvalEvery == 0 {
		when = fmt.Sprintf("its final evaluation at step %d (train.eval_every = 0 still evaluates at the end)", o.Train.Steps)
	}
	return fmt.Errorf("train: no validation data: the data source has no validation sequence of %d+1 tokens in any source (%s), so the run would fail at %s; "+
		"byte-level data (data.kind = \"bytes\"): set train.val_fraction > 0 or data.val to a file; a dataset: rebuild it with prepare.tokenizer.shards.val_fraction > 0",
		o.Model.SeqLen, strings.Join(names, ", "), when)
}
