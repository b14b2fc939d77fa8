package checkpoint

import "errors"

// VerifyOrMark verifies the checkpoint just installed in dir
// (VerifyWritten; with restore, the restore test of the Adam moments, which
// also fails on a moment in memory that is not finite) and marks one that
// fails (MarkFailed: never last-good, never resumed from). verr is why it
// failed (nil: it verified); markErr is the failure to mark it.
func VerifyOrMark(dir string, p *Payload, restore bool) (rep VerifyReport, verr, markErr error) {
	rep, verr = VerifyWritten(dir, p, restore)
	if verr == nil && rep.Restored && !rep.OptStateFinite {
		verr = errors.New("the optimizer state in memory holds a NaN or an infinity (opt_state_finite = 0)")
	}
	if verr != nil {
		markErr = MarkFailed(dir, p.State.Step, verr.Error())
	}
	return rep, verr, markErr
}
