package optim

import "slices"

// SwapState turns optimizer state written under optim.name from (restored
// into o, which runs optim.name to) into to's, keeping the weights' step
// count where it can, and returns the spans whose state started fresh.
// The state starts fresh only where it differs:
//
//   - adamw, nadamw, adamc among themselves: the same m, v and step count,
//     all kept;
//   - to muon: the Muon matrices' momentum buffers (and their V) start at
//     zero; the AdamW group's moments and the step count are kept;
//   - from muon: the tensors Muon updated (those whose V is zero: Muon leaves
//     it so) get fresh Adam moments, the others keep theirs, and the step
//     count restarts at 0, so the bias correction of the fresh moments starts
//     as at step 1 (the kept moments are scaled by √bc2/bc1 for a while:
//     smaller steps, never larger).
//
// Across Muon the update's scale changes: the update-norm window is rescaled
// at the next applied step to the new update norm (RebaseUpdateNorms), so
// update clipping holds from the first step; the loss and gradient-norm
// windows of skip-step do not depend on the optimizer and are kept.
func (o *AdamW) SwapState(from, to string) (fresh []string) {
	switch {
	case from == to:
		return nil
	case to == "muon":
		for i, sp := range o.spans {
			if o.IsMuon(i) {
				clear(o.M[sp.Offset : sp.Offset+sp.Size])
				clear(o.V[sp.Offset : sp.Offset+sp.Size])
				fresh = append(fresh, sp.Name)
			}
		}
	case from == "muon":
		for _, sp := range o.spans {
			v := o.V[sp.Offset : sp.Offset+sp.Size]
			if sp.Size > 0 && !slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
				clear(o.M[sp.Offset : sp.Offset+sp.Size])
				fresh = append(fresh, sp.Name)
			}
		}
		o.Steps = 0
	}
	if from == "muon" || to == "muon" {
		o.RebaseUpdateNorms = true
	}
	return fresh
}
