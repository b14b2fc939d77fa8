package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/faults"
)

// verifyCheckpoint checks the checkpoint just installed in dir
// (checkpoint.VerifyWritten): its files re-read against SHA256SUMS, and
// for every checkpoint.verify_restore_every-th checkpoint of this
// invocation and the final one the restore test of the Adam moments.
// A failure marks the checkpoint failed (checkpoint.VerifyOrMark: never
// last-good, never resumed from) and returns why; "" when it verified.
// [debug] corrupt_checkpoint_at_step flips a byte of its optimizer file
// first.
func (t *trainer) verifyCheckpoint(dir string, p *checkpoint.Payload, kind string) string {
	if t.faults.CorruptCheckpoint(p.State.Step) {
		if err := faults.FlipByte(dir, checkpoint.OptimizerFile); err != nil {
			t.log.Warn("debug fault not applied", "err", err)
		}
	}
	rep, err, merr := checkpoint.VerifyOrMark(dir, p, t.restoreDue(kind))
	if err == nil {
		t.log.Debug("checkpoint verified", "dir", dir, "sums_seconds", rep.SumsSeconds, "restore_test", rep.Restored, "restore_seconds", rep.RestoreSeconds)
		return ""
	}
	why := err.Error()
	t.log.Error("checkpoint failed its verification after the write: it will not be resumed from nor become last-good (SEV0 checkpoint_failed)", "dir", dir, "err", why)
	if merr != nil {
		why = fmt.Sprintf("%s; and marking it failed: %v", why, merr)
		t.log.Error("checkpoint: could not record the failed verification", "dir", dir, "err", merr)
	}
	return why
}

// restoreDue counts the checkpoint about to be verified and reports
// whether it gets the restore test: every checkpoint.verify_restore_every-th
// of this invocation, and the final one (never when it is 0).
func (t *trainer) restoreDue(kind string) bool {
	t.ckWritten++
	every := t.o.Checkpoint.VerifyRestoreEvery
	return every > 0 && (t.ckWritten%every == 0 || kind == "final")
}
