package dashboard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLRPhaseMarkers: the LR-phase markers follow the schedule's phases —
// a change of lr_phase, and a change of the [[optim.phases]] entry in force
// that keeps the phase's name (a WSD-S whose spacing changes: stable →
// stable), named by its entry; one marker per step, none while nothing
// changes, none at the first line.
func TestLRPhaseMarkers(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i, l := range []struct {
		phase string
		entry int
	}{
		{"warmup", 0}, {"stable", 0}, {"stable", 0}, {"decay", 0}, // 1..4: optim.schedule (wsd-s)
		{"stable", 1}, {"stable", 1}, {"decay", 1}, // 5..7: optim.phases[0], wsds with another spacing
		{"rewarm", 2}, {"stable", 2}, {"hold", 3}, {"hold", 3},
	} {
		entry := ""
		if l.entry > 0 {
			entry = fmt.Sprintf(`,"lr_phase_entry":%d`, l.entry)
		}
		fmt.Fprintf(&b, `{"step":%d,"tokens_seen":%d,"wall_time":%d,"train_loss_raw":3,"learning_rate":0.001,"lr_phase":%q,"lr_cycle":0%s}`+"\n", i+1, 100*(i+1), i, l.phase, entry)
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newRunData(dir)
	if err := d.Refresh(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range d.events {
		if e.Kind == "lr_phase" {
			got = append(got, fmt.Sprintf("%g %s %s", e.Step, e.Title, e.Detail))
		}
	}
	want := []string{
		"2 LR phase: warmup → stable ",
		"4 LR phase: stable → decay ",
		"5 LR phase: decay → stable optim.phases[0] takes over",
		"7 LR phase: stable → decay ",
		"8 LR phase: decay → rewarm optim.phases[1] takes over",
		"9 LR phase: rewarm → stable ",
		"10 LR phase: stable → hold optim.phases[2] takes over",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("markers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
