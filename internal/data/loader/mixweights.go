package loader

// MixWeights returns the normalised mixture weights, one per SourceNames
// entry, of the data stage in force at step index step (0-based, as in
// Fill): data.sources before the first data.stages entry, then each
// stage's from its start_step. The trainer's val_loss averages the sources
// the run trains on with these weights (a source of weight 0, a held-out
// domain, is reported only as its slice).
func (l *Loader) MixWeights(step int) []float64 {
	best := 0
	for i, st := range l.mix.stages {
		if st.startStep <= step && st.startStep >= l.mix.stages[best].startStep {
			best = i
		}
	}
	return append([]float64(nil), l.mix.stages[best].weights...)
}
