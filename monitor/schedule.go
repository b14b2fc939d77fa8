package monitor

import "sort"

// schedule is the run's data mixture schedule as the rules read it: the
// stages sorted by StartStep with their weights normalised, and every
// source a stage names.
type schedule struct {
	stages []MixStage      // nil = no targets
	srcs   map[string]bool // every source named by a stage
}

// newSchedule normalises stages (in any order; a stage whose weights sum
// to nothing is dropped, a negative or non-finite weight counts as 0).
func newSchedule(stages []MixStage) schedule {
	sc := schedule{srcs: map[string]bool{}}
	for _, st := range stages {
		var sum float64
		for _, w := range st.Weights {
			if finite(w) && w > 0 {
				sum += w
			}
		}
		if sum <= 0 {
			continue
		}
		n := MixStage{StartStep: st.StartStep, RampSteps: st.RampSteps, Weights: map[string]float64{}}
		for name, w := range st.Weights {
			if !finite(w) || w < 0 {
				w = 0
			}
			n.Weights[name] = w / sum
			sc.srcs[name] = true
		}
		sc.stages = append(sc.stages, n)
	}
	sort.SliceStable(sc.stages, func(i, j int) bool { return sc.stages[i].StartStep < sc.stages[j].StartStep })
	return sc
}

// targetAt returns the weight of source src in the data stage in force at
// step — inside a stage's ramp, the loader's interpolation between the
// stage before and this one (MixStage.RampSteps); ok is false when no
// stage has started yet, no stage names src, or step is in the ramp of a
// first stage (the mixture before it is not known here).
func (sc *schedule) targetAt(step int64, src string) (w float64, ok bool) {
	if !sc.srcs[src] {
		return 0, false
	}
	i := sort.Search(len(sc.stages), func(i int) bool { return sc.stages[i].StartStep > step }) - 1
	if i < 0 {
		return 0, false
	}
	st := &sc.stages[i]
	to := st.Weights[src] // a source the stage does not name gets 0
	if j := step - st.StartStep; st.RampSteps > 1 && j < st.RampSteps-1 {
		if i == 0 {
			return 0, false
		}
		a := float64(j+1) / float64(st.RampSteps)
		return (1-a)*sc.stages[i-1].Weights[src] + a*to, true
	}
	return to, true
}

// rampOf is the ramp length of the data stage in force at step when step
// lies inside that ramp, else 0.
func (sc *schedule) rampOf(step int64) int64 {
	i := sort.Search(len(sc.stages), func(i int) bool { return sc.stages[i].StartStep > step }) - 1
	if i < 0 || step-sc.stages[i].StartStep >= sc.stages[i].RampSteps-1 {
		return 0
	}
	return sc.stages[i].RampSteps
}

// stageStart is the first step of the data stage in force at step.
func (sc *schedule) stageStart(step int64) int64 {
	i := sort.Search(len(sc.stages), func(i int) bool { return sc.stages[i].StartStep > step }) - 1
	if i < 0 {
		return 0
	}
	return sc.stages[i].StartStep
}

// stageStartsIn reports whether a data stage after the first starts at a
// step in (after, step].
func (sc *schedule) stageStartsIn(after, step int64) bool {
	for i, st := range sc.stages {
		if i > 0 && st.StartStep > after && st.StartStep <= step && st.StartStep > 1 {
			return true
		}
	}
	return false
}

// laterStageStarts are the start steps of the data stages after the first.
func (sc *schedule) laterStageStarts() []int64 {
	var out []int64
	for i, st := range sc.stages {
		if i > 0 && st.StartStep > 1 {
			out = append(out, st.StartStep)
		}
	}
	return out
}
