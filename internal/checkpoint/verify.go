package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// VerifyReport is what VerifyWritten measured.
type VerifyReport struct {
	SumsSeconds    float64 // re-reading every file against SHA256SUMS
	RestoreSeconds float64 // the restore test (0 when it did not run)
	Restored       bool    // the restore test ran
	// OptStateFinite is false when the restore test found a non-finite
	// moment in memory (the checkpoint still verifies: it holds what was
	// in memory); meaningful only when Restored.
	OptStateFinite bool
}

// VerifyWritten checks a checkpoint right after Write installed it: every
// file is re-read and its SHA-256 compared with SHA256SUMS (Verify,
// streaming through a 1 MiB buffer), and when restore is set the restore
// test reads optimizer.safetensors back and compares the Adam moments bit
// for bit with p.M and p.V, the state still in memory, scanning them for
// non-finite values on the way. The error names the file, and for the
// restore test the tensor and element; a checkpoint that fails must not be
// resumed from nor become last-good (MarkFailed).
func VerifyWritten(dir string, p *Payload, restore bool) (VerifyReport, error) {
	rep := VerifyReport{OptStateFinite: true}
	t0 := time.Now()
	if err := Verify(dir); err != nil {
		return rep, err
	}
	rep.SumsSeconds = time.Since(t0).Seconds()
	if !restore {
		return rep, nil
	}
	t1 := time.Now()
	finite, err := restoreTest(filepath.Join(dir, OptimizerFile), p.Tensors, p.M, p.V)
	rep.RestoreSeconds, rep.Restored, rep.OptStateFinite = time.Since(t1).Seconds(), err == nil, finite
	return rep, err
}

// restoreTest reads the optimizer file at path and compares each tensor's
// exp_avg and exp_avg_sq with m and v bit for bit; finite is false when
// m or v holds a NaN or an infinity.
func restoreTest(path string, ts []model.Tensor, m, v []float32) (finite bool, err error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return true, fmt.Errorf("restore test: %w", err)
	}
	finite = true
	for _, part := range []struct {
		suffix string
		mem    []float32
	}{{".exp_avg", m}, {".exp_avg_sq", v}} {
		for _, x := range ts {
			name := x.Name + part.suffix
			got, ok := f.Get(name)
			if !ok {
				return finite, fmt.Errorf("restore test: %s: tensor %s is missing", path, name)
			}
			if got.DType != safetensors.F32 || len(got.Data) != 4*x.Size || x.Offset+x.Size > len(part.mem) {
				return finite, fmt.Errorf("restore test: %s: tensor %s holds %d bytes of %s, want %d of F32", path, name, len(got.Data), got.DType, 4*x.Size)
			}
			mem := part.mem[x.Offset : x.Offset+x.Size]
			for i, want := range mem {
				w := math.Float32bits(want)
				if w&0x7f800000 == 0x7f800000 { // exponent all ones: NaN or ±Inf
					finite = false
				}
				if b := binary.LittleEndian.Uint32(got.Data[4*i:]); b != w {
					return finite, fmt.Errorf("restore test: %s: %s[%d] reads back as %g (bits %#08x), in memory %g (bits %#08x)",
						path, name, i, math.Float32frombits(b), b, want, w)
				}
			}
		}
	}
	return finite, nil
}

// VerifyFailed is Confirmation.Verification of a checkpoint that failed
// its verification after the write.
const VerifyFailed = "failed"

// MarkFailed records that the checkpoint dir failed its verification
// after the write (why): confirmation.json says rejected with
// verification "failed", so it is never last-good (List, LastGood,
// LastGoodBefore, Resolve), never resumed from (Latest) and never a
// rollback's target (NewestValidAtOrBefore).
func MarkFailed(dir string, step int, why string) error {
	return WriteConfirmation(dir, &Confirmation{Status: Rejected, Through: step, Verification: VerifyFailed,
		Reason: "verification after the write failed: " + why})
}

// ErrVerifyFailed is wrapped by usable for a checkpoint MarkFailed marked.
var ErrVerifyFailed = errors.New("failed its verification after the write (confirmation.json)")

// usable is nil unless dir's confirmation.json records a failed
// verification (or cannot be read).
func usable(dir string) error {
	c, err := ReadConfirmation(dir)
	if err != nil {
		return err
	}
	if c != nil && c.Verification == VerifyFailed {
		return fmt.Errorf("%s: %w: %s", dir, ErrVerifyFailed, c.Reason)
	}
	return nil
}
