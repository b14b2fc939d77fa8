package dashboard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// stageCfg is one data.stages entry of a synthetic run whose data.sources
// are {a 0.8, b 0.2}.
type stageCfg struct {
	start, ramp int
	w           map[string]float64
}

// stageStep is step s's line as kestrel's trainer writes it: the stage in
// force, the ramp's progress and the interpolated mixture target, as the
// loader computes them (loader.MixStage, MixWeights).
func stageStep(s int, stages []stageCfg) *runlog.Step {
	m := &runlog.Step{Step: s, TokensSeen: int64(100 * s), WallTime: float64(s), TrainLossRaw: 3, LearningRate: 1e-3, LRPhase: "stable", BatchSize: 8}
	prev := map[string]float64{"a": 0.8, "b": 0.2}
	m.SourceMixTarget = prev
	for i, st := range stages {
		if s < st.start {
			break
		}
		m.DataStageEntry, m.DataStageRamp, m.SourceMixTarget = i+1, 0, st.w
		if j := s - st.start; st.ramp > 1 && j < st.ramp-1 {
			a := float64(j+1) / float64(st.ramp)
			m.DataStageRamp, m.SourceMixTarget = a, map[string]float64{}
			for k := range prev {
				m.SourceMixTarget[k] = (1-a)*prev[k] + a*st.w[k]
			}
		}
		prev = st.w
	}
	return m
}

// stageLines are the metrics.jsonl lines of steps from..to, with an
// evaluation line after every third step (not a step line: no marker).
func stageLines(from, to int, stages []stageCfg) []byte {
	var b []byte
	for s := from; s <= to; s++ {
		b = runlog.AppendLine(b, stageStep(s, stages))
		if s%3 == 0 {
			b = runlog.AppendLine(b, &runlog.Eval{Step: s, TokensSeen: int64(100 * s), WallTime: float64(s), ValLoss: 3})
		}
	}
	return b
}

// stageMarkers are the data_stage events of d as "step title | detail".
func stageMarkers(d *runData) []string {
	var out []string
	for _, e := range d.events {
		if e.Kind == "data_stage" {
			out = append(out, fmt.Sprintf("%g %s | %s", e.Step, e.Title, e.Detail))
		}
	}
	return out
}

func refreshed(t *testing.T, dir string, d *runData) *runData {
	t.Helper()
	if d == nil {
		d = newRunData(dir)
	}
	if err := d.Refresh(); err != nil {
		t.Fatal(err)
	}
	return d
}

var (
	half   = map[string]float64{"a": 0.5, "b": 0.5}
	bOnly  = map[string]float64{"a": 0, "b": 1}
	ramp36 = []stageCfg{{start: 3, ramp: 4, w: half}} // steps 3..5 interpolate, 6 on in force
)

// TestDataStageMarkers: kestrel's step lines (data_stage_entry,
// data_stage_ramp, source_mix_target) give a marker at each stage's start —
// with the weights a ramp moves to and its steps, or those switched to —
// and one at the end of each ramp; none for a run without stages, none for
// evaluation lines, and a stage in force at the first line starts there.
func TestDataStageMarkers(t *testing.T) {
	for _, c := range []struct {
		name   string
		stages []stageCfg
		want   []string
	}{
		{"no stages", nil, nil},
		{"switch at step 4", []stageCfg{{start: 4, w: bOnly}}, []string{
			"4 data stage 1 starts: {a 0, b 1} | data.stages[0]; switched at once"}},
		{"ramp over 4 steps from step 3", ramp36, []string{
			"3 data stage 1 starts: ramping to {a 0.5, b 0.5} over 4 steps | data.stages[0]; from {a 0.8, b 0.2}",
			"6 data stage 1 ramp done | data.stages[0]; {a 0.5, b 0.5} in force"}},
		{"ramp from step 2, the first a config takes", []stageCfg{{start: 2, ramp: 2, w: bOnly}}, []string{
			"2 data stage 1 starts: ramping to {a 0, b 1} over 2 steps | data.stages[0]; from {a 0.8, b 0.2}",
			"3 data stage 1 ramp done | data.stages[0]; {a 0, b 1} in force"}},
		{"ramp from step 1 (another writer's log)", []stageCfg{{start: 1, ramp: 3, w: bOnly}}, []string{
			"1 data stage 1 starts: ramping over 3 steps | data.stages[0]; from the first step",
			"3 data stage 1 ramp done | data.stages[0]; {a 0, b 1} in force"}},
		{"switch at step 1", []stageCfg{{start: 1, w: half}}, []string{
			"1 data stage 1 starts: {a 0.5, b 0.5} | data.stages[0]; switched at once"}},
		{"back to back: a ramp done at 5, the next stage at 6", []stageCfg{{start: 3, ramp: 3, w: half}, {start: 6, ramp: 2, w: bOnly}}, []string{
			"3 data stage 1 starts: ramping to {a 0.5, b 0.5} over 3 steps | data.stages[0]; from {a 0.8, b 0.2}",
			"5 data stage 1 ramp done | data.stages[0]; {a 0.5, b 0.5} in force",
			"6 data stage 2 starts: ramping to {a 0, b 1} over 2 steps | data.stages[1]; from {a 0.5, b 0.5}",
			"7 data stage 2 ramp done | data.stages[1]; {a 0, b 1} in force"}},
		{"a ramp of 50 steps", []stageCfg{{start: 5, ramp: 50, w: bOnly}}, []string{
			"5 data stage 1 starts: ramping to {a 0, b 1} over 50 steps | data.stages[0]; from {a 0.8, b 0.2}",
			"54 data stage 1 ramp done | data.stages[0]; {a 0, b 1} in force"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), stageLines(1, 60, c.stages), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := stageMarkers(refreshed(t, dir, nil)); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("markers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestDataStageMarkersResume: a run stopped before, at, inside and at the
// end of a ramp and resumed from a checkpoint there shows the markers of
// the uninterrupted run, once each — whether the trainer cut metrics.jsonl
// back to the checkpoint (the dashboard reads it again) or a log was
// appended to with the steps going back (the replaced trajectory's markers
// dropped) — with the dashboard reading before the stop, after it and at
// the end.
func TestDataStageMarkersResume(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.jsonl")
	write := func(b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(stageLines(1, 12, ramp36))
	want := strings.Join(stageMarkers(refreshed(t, dir, nil)), "\n")
	if strings.Count(want, "\n") != 1 {
		t.Fatalf("uninterrupted run: markers %q, want a start and a ramp end", want)
	}
	for _, ck := range []int{2, 3, 4, 5, 6, 7} {
		for _, cut := range []bool{true, false} {
			died := stageLines(1, 9, ramp36) // got to step 9, resumed from the checkpoint of step ck
			write(died)
			d := refreshed(t, dir, nil)
			if cut {
				write(stageLines(1, ck, ramp36))
				d = refreshed(t, dir, d)
				write(stageLines(1, 12, ramp36))
			} else {
				write(append(died, stageLines(ck+1, 12, ramp36)...))
			}
			if got := strings.Join(stageMarkers(refreshed(t, dir, d)), "\n"); got != want {
				t.Errorf("resumed from step %d (log cut back: %v): markers\n%s\nwant\n%s", ck, cut, got, want)
			}
		}
	}
}
