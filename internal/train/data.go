package train

// DataSource is what the trainer reads batches from. Byte-level text files
// (data.kind = "bytes") and prepared datasets (data.kind = "dataset", built by
// internal/data/loader) both implement it. It uses only plain types so that
// the loader need not import the trainer.
//
// Batches are a pure function of the step: Fill for the same arguments must
// always write the same tokens, so resuming needs nothing but the step.
type DataSource interface {
	// SeqLen is T, the tokens per sequence (inputs; targets are shifted by one).
	SeqLen() int
	// SourceNames names the sources (one, "train", for a plain text file).
	SourceNames() []string
	// Fill writes rows [row0, row0+n) of the global batch of `step`, whose
	// size is `batch` sequences. step is 0-based: the trainer's first
	// optimizer step (metrics line "step": 1) reads step 0, so step matches
	// the 0-based index of train.batch_schedule entries. Inputs and targets
	// are n·T long; segIDs
	// (n·T) receives document segment ids when not nil; srcs (n) receives
	// each row's source index when not nil.
	Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error
	// ValRows is the number of validation sequences of source s.
	ValRows(s int) int
	// FillVal writes validation rows [row0, row0+n) of source s.
	FillVal(s, row0, n int, inputs, targets, segIDs []int32) error
}
