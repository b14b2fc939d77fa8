package loader

// MixWeights returns the normalised mixture weights, one per SourceNames
// entry, of the data stage in force at step index step (0-based, as in
// Fill): data.sources before the first data.stages entry, then each
// stage's from its start_step. The trainer's val_loss averages the sources
// the run trains on with these weights (a source of weight 0, a held-out
// domain, is reported only as its slice).
func (l *Loader) MixWeights(step int) []float64 {
	return append([]float64(nil), l.mix.stages[l.stageAtStep(step)].weights...)
}

// MixStage returns the config stage in force at step index step (0-based,
// as in Fill): 0 for data.sources, i+1 for data.stages[i] from its
// start_step on; and ramp, the progress (j+1)/ramp_steps of the stage's
// ramp at its j-th interpolated step, 0 outside a ramp (before it, and
// from start_step+ramp_steps−1 on, where the stage's own weights are in
// force). It implements datasrc.MixStager.
func (l *Loader) MixStage(step int) (entry int, ramp float64) {
	st := &l.mix.stages[l.stageAtStep(step)]
	return st.cfg, st.rampAt // rampAt is 0 outside a ramp step
}

// stageAtStep is the index in l.mix.stages of the mixture stage in force
// at step index step.
func (l *Loader) stageAtStep(step int) int {
	best := 0
	for i, st := range l.mix.stages {
		if st.startStep <= step && st.startStep >= l.mix.stages[best].startStep {
			best = i
		}
	}
	return best
}
