package dashboard

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// mixTargetPrefix names the per-source mixture targets of a step line.
const mixTargetPrefix = "source_mix_target/"

// stagePoint is what a step line says of the data stage: the entry in
// force (data_stage_entry, absent = 0: data.sources) and the ramp's
// progress (data_stage_ramp, absent = 0: not in a ramp).
type stagePoint struct{ entry, ramp float64 }

// dataStageEvent marks a kestrel run's data stages from the fields the
// trainer writes on every step line: a stage's start (a change of
// data_stage_entry), with the weights it moves to and over how many steps,
// and the end of its ramp (data_stage_ramp gone, the stage's own weights
// in force). Each marker is a function of the line and the step line
// before it (read back from the log's columns), and a line whose step goes
// back (a log appended to after a resume, not cut back) first drops the
// stage markers of the trajectory it replaces: a resume inside a ramp
// neither repeats nor loses a marker. Lines without lr_phase (evaluations,
// checkpoints, other trainers' logs) are not step lines and are skipped.
func (d *runData) dataStageEvent(rec *runlog.Record, step float64, ev func(kind, title, detail string)) {
	if _, ok := rec.Str("lr_phase"); !ok {
		return
	}
	d.dropStageEventsFrom(step)
	cur := stagePoint{entry: numOr0(rec, "data_stage_entry"), ramp: numOr0(rec, "data_stage_ramp")}
	row, ok := d.prevStepRow()
	var prev stagePoint // the first step line: a stage in force there starts there
	if ok {
		prev = stagePoint{entry: colOr0(d.Column("data_stage_entry"), row), ramp: colOr0(d.Column("data_stage_ramp"), row)}
	}
	now := recMix(rec)
	defer func() { d.lastMix = rowMix{row: d.Rows - 1, mix: now} }()
	n := int(cur.entry)
	switch {
	case cur.entry != prev.entry && cur.ramp > 0:
		steps := int(math.Round(1 / cur.ramp))
		if !ok {
			ev("data_stage", fmt.Sprintf("data stage %d starts: ramping over %d steps", n, steps), stageDetail(n, "from the first step"))
			return
		}
		before := d.mixAt(row)
		to := make(map[string]float64, len(now))
		for src, w := range now { // the ramp's first step is (1−a)·before + a·weights
			to[src] = before[src] + (w-before[src])/cur.ramp
		}
		ev("data_stage", fmt.Sprintf("data stage %d starts: ramping to %s over %d steps", n, formatMix(to), steps), stageDetail(n, "from "+formatMix(before)))
	case cur.entry != prev.entry:
		ev("data_stage", fmt.Sprintf("data stage %d starts: %s", n, formatMix(now)), stageDetail(n, "switched at once"))
	case prev.ramp > 0 && cur.ramp == 0:
		ev("data_stage", fmt.Sprintf("data stage %d ramp done", n), stageDetail(n, formatMix(now)+" in force"))
	}
}

// prevStepRow is the step line before the current row (the last one):
// the latest row not superseded that has a learning_rate. ok is false
// when there is none.
func (d *runData) prevStepRow() (int, bool) {
	lr := d.Column("learning_rate")
	for i := d.Rows - 2; i >= 0 && lr != nil; i-- {
		if !d.Superseded[i] && !math.IsNaN(float64(lr[i])) {
			return i, true
		}
	}
	return 0, false
}

// rowMix is the mixture target of one step line, as written (float64).
type rowMix struct {
	row int
	mix map[string]float64
}

// recMix is the mixture target (source_mix_target/<source>) of a line.
func recMix(rec *runlog.Record) map[string]float64 {
	out := map[string]float64{}
	rec.Each(func(name string, v float64) {
		if src, ok := strings.CutPrefix(name, mixTargetPrefix); ok {
			out[src] = v
		}
	})
	return out
}

// mixAt is the mixture target of row i: the last step line's as written,
// else (a row before a step that went back) read back from the columns,
// which hold float32.
func (d *runData) mixAt(i int) map[string]float64 {
	if d.lastMix.mix != nil && d.lastMix.row == i {
		return d.lastMix.mix
	}
	out := map[string]float64{}
	for _, name := range d.Names() {
		if src, ok := strings.CutPrefix(name, mixTargetPrefix); ok {
			if v := float64(d.Column(name)[i]); !math.IsNaN(v) {
				out[src] = v
			}
		}
	}
	return out
}

// dropStageEventsFrom removes the data-stage markers at step or after it,
// those of a trajectory a line with an earlier step replaces. Events are
// appended in the log's order, so only the tail is looked at.
func (d *runData) dropStageEventsFrom(step float64) {
	i := len(d.events)
	for i > 0 && d.events[i-1].Step >= step {
		i--
	}
	if i == len(d.events) {
		return
	}
	tail := slices.DeleteFunc(slices.Clone(d.events[i:]), func(e Event) bool { return e.Kind == "data_stage" })
	d.events = append(d.events[:i], tail...)
}

// stageDetail names a stage's config entry: data.stages[n−1], or
// data.sources for entry 0.
func stageDetail(n int, what string) string {
	if n == 0 {
		return "data.sources; " + what
	}
	return fmt.Sprintf("data.stages[%d]; %s", n-1, what)
}

// formatMix writes a mixture as {books 0.3, code 0.05, …}, sources by name.
func formatMix(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		w := m[k]
		if math.Abs(w) < 1e-6 { // an extrapolated 0 carries rounding
			w = 0
		}
		parts[i] = fmt.Sprintf("%s %.3g", k, w)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func numOr0(rec *runlog.Record, name string) float64 {
	if v, ok := rec.Num(name); ok && !math.IsNaN(v) {
		return v
	}
	return 0
}

func colOr0(col []float32, i int) float64 {
	if col == nil || math.IsNaN(float64(col[i])) {
		return 0
	}
	return float64(col[i])
}
