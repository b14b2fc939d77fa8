package datasrc

import (
	"fmt"
	"os"
)

// BytesSource serves byte-level text (vocab 256): training rows are windows
// at offsets drawn from a PRNG keyed by (seed, step, row), so a batch is a
// pure function of the step and independent of how it is split into
// micro-batches; validation rows are consecutive non-overlapping windows.
type BytesSource struct {
	train, val []byte
	t          int
	seed       uint64
}

// OpenBytes reads trainPath (and valPath, or holds out the last valFraction
// of the training file when valPath is empty) for sequences of t tokens.
// The validation split must hold at least one sequence (t+1 bytes): every
// run evaluates at its end, so a run without validation data is refused
// here rather than failing at its first evaluation.
func OpenBytes(trainPath, valPath string, valFraction float64, t int, seed uint64) (*BytesSource, error) {
	if !(valFraction >= 0 && valFraction < 1) { // NaN too
		return nil, fmt.Errorf("train.val_fraction must be in [0, 1), got %g", valFraction)
	}
	tr, err := os.ReadFile(trainPath)
	if err != nil {
		return nil, fmt.Errorf("data.train: %w", err)
	}
	var va []byte
	if valPath != "" {
		if va, err = os.ReadFile(valPath); err != nil {
			return nil, fmt.Errorf("data.val: %w", err)
		}
		if len(va) < t+1 {
			return nil, fmt.Errorf("data.val %s: %d bytes, need at least seq_len+1 = %d for one validation sequence", valPath, len(va), t+1)
		}
	} else {
		n := int(float64(len(tr)) * (1 - valFraction))
		tr, va = tr[:n], tr[n:]
		if len(va) < t+1 {
			return nil, fmt.Errorf("train.val_fraction = %g holds out %d bytes of data.train %s for validation, need at least seq_len+1 = %d "+
				"(every run evaluates at its end): raise train.val_fraction or set data.val to a validation file", valFraction, len(va), trainPath, t+1)
		}
	}
	if len(tr) < t+2 {
		return nil, fmt.Errorf("data.train %s: %d training bytes, need at least seq_len+2 = %d", trainPath, len(tr), t+2)
	}
	return NewBytesSource(tr, va, t, seed), nil
}

// NewBytesSource serves the given training and validation bytes.
func NewBytesSource(train, val []byte, t int, seed uint64) *BytesSource {
	return &BytesSource{train: train, val: val, t: t, seed: seed}
}

// Text returns the training and validation bytes the source serves.
func (s *BytesSource) Text() (train, val []byte) { return s.train, s.val }

// SeqLen is the number of tokens per row.
func (s *BytesSource) SeqLen() int { return s.t }

// SourceNames has the single source "train".
func (s *BytesSource) SourceNames() []string { return []string{"train"} }

// TrainBytes and ValBytes report the split sizes.
func (s *BytesSource) TrainBytes() int { return len(s.train) }

// ValBytes is the size of the validation split.
func (s *BytesSource) ValBytes() int { return len(s.val) }

// SplitMix is one step of splitmix64.
func SplitMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Mix3 hashes three keys into one well-mixed word (splitmix64): the
// random streams of the sources and of the injected faults are pure
// functions of their keys.
func Mix3(a, b, c uint64) uint64 { return SplitMix(SplitMix(SplitMix(a)^b) ^ c) }

// Fill writes rows [row0, row0+n) of step's batch.
func (s *BytesSource) Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error {
	T := s.t
	if row0 < 0 || row0+n > batch {
		return fmt.Errorf("bytes source: rows [%d, %d) outside a batch of %d", row0, row0+n, batch)
	}
	if len(inputs) < n*T || len(targets) < n*T {
		return fmt.Errorf("bytes source: buffers hold %d tokens, need %d", min(len(inputs), len(targets)), n*T)
	}
	span := uint64(len(s.train) - T - 1)
	for r := 0; r < n; r++ {
		off := int(Mix3(s.seed, uint64(step), uint64(row0+r)) % (span + 1))
		for i := 0; i < T; i++ {
			inputs[r*T+i] = int32(s.train[off+i])
			targets[r*T+i] = int32(s.train[off+i+1])
		}
		if srcs != nil {
			srcs[r] = 0
		}
	}
	if segIDs != nil {
		clear(segIDs[:n*T])
	}
	return nil
}

// ValRows is the number of non-overlapping validation windows.
func (s *BytesSource) ValRows(src int) int {
	if src != 0 || len(s.val) < 2 {
		return 0
	}
	return (len(s.val) - 1) / s.t
}

// FillVal writes validation rows [row0, row0+n).
func (s *BytesSource) FillVal(src, row0, n int, inputs, targets, segIDs []int32) error {
	T := s.t
	if src != 0 || row0 < 0 || row0+n > s.ValRows(src) {
		return fmt.Errorf("bytes source: validation rows [%d, %d) of source %d outside %d rows", row0, row0+n, src, s.ValRows(src))
	}
	for r := 0; r < n; r++ {
		off := (row0 + r) * T
		for i := 0; i < T; i++ {
			inputs[r*T+i] = int32(s.val[off+i])
			targets[r*T+i] = int32(s.val[off+i+1])
		}
	}
	if segIDs != nil {
		clear(segIDs[:n*T])
	}
	return nil
}
