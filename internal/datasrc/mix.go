package datasrc

// Mix is what a source reports of its mixture at one step: the metrics
// line's source_mix_target, data_stage_entry and data_stage_ramp.
type Mix struct {
	Target map[string]float64 // weight by source name; nil when the source does not report weights
	Entry  int                // MixStager's entry; 0 when the source does not report stages
	Ramp   float64            // MixStager's ramp progress; 0 outside a ramp
}

// MixAt is the mixture d draws 0-based step index step with (as in Fill):
// its MixWeigher weights (inside a data stage's ramp, the interpolated
// ones) by the source names names (SourceNames' order), and its MixStager
// stage. A source without those method sets reports the zero Mix.
func MixAt(d Source, names []string, step int) Mix {
	var m Mix
	if mw, ok := d.(MixWeigher); ok {
		if w := mw.MixWeights(step); len(w) == len(names) {
			m.Target = make(map[string]float64, len(w))
			for i, x := range w {
				m.Target[names[i]] = x
			}
		}
	}
	if ms, ok := d.(MixStager); ok {
		m.Entry, m.Ramp = ms.MixStage(step)
	}
	return m
}
