package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// TestUnclosedIncidentKeepsCheckpoint: a corrupted batch at step 30 is a
// SEV1 data incident the run survives. With checkpoint.keep = 2 the
// checkpoint from before it is kept to the end, whatever keep says, until
// a person closes the incident; the next checkpoint then lets it go.
func TestUnclosedIncidentKeepsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(60)
	cfg.Train.EvalEvery, cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 60, 5, 2
	cfg.Debug.CorruptBatchAtStep = 30
	cfg.Monitor.KLSpikeMin = 100 // the tiny model's outputs move fast between early checkpoints
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	steps := func() []int {
		list, err := checkpoint.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, c := range list {
			out = append(out, c.Step)
		}
		return out
	}
	got := steps()
	if !slices.Contains(got, 25) {
		t.Fatalf("checkpoints %v: the one from before the incident at step 30 was deleted", got)
	}
	list, err := Incidents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "inc-30" || list[0].State != "open" || !slices.Contains(list[0].Rules, "batch_anomaly") {
		t.Fatalf("incidents %+v, want one open inc-30 with batch_anomaly", list)
	}
	if _, err := CloseIncident(dir, "inc-30", ""); err == nil || !strings.Contains(err.Error(), "--reason") {
		t.Errorf("close without a reason: %v", err)
	}
	if _, err := CloseIncident(dir, "inc-31", "x"); err == nil || !strings.Contains(err.Error(), "inc-30") {
		t.Errorf("close of an unknown id: %v, want the list of ids", err)
	}
	if _, err := CloseIncident(dir, "inc-30", "one bad batch, the run recovered"); err != nil {
		t.Fatal(err)
	}
	if _, err := CloseIncident(dir, "inc-30", "again"); err == nil || !strings.Contains(err.Error(), "already closed") {
		t.Errorf("second close: %v", err)
	}
	cfg.Train.Steps = 70
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	if got := steps(); slices.Contains(got, 25) {
		t.Errorf("checkpoints %v: 25 still held after the incident was closed", got)
	}
}

// TestReadHistoryTail: a metrics.jsonl longer than historyTail is read
// from its tail, the cut first line skipped; steps at or after `before`
// and checkpoint events are left out; keep bounds the step lines.
func TestReadHistoryTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	var b []byte
	pad := strings.Repeat("x", 100)
	for s := 1; len(b) < historyTail+(1<<20); s++ {
		b = fmt.Appendf(b, `{"step":%d,"train_loss_raw":%d.5,"note":"%s"}`+"\n", s, s%7, pad)
		if s%50 == 0 {
			b = fmt.Appendf(b, `{"step":%d,"event":"checkpoint","checkpoint_time":1}`+"\n", s)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	hist, err := readHistory(path, 100000, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 64 {
		t.Fatalf("%d samples, want the last 64 step lines", len(hist))
	}
	for i, s := range hist {
		if s.Step >= 100000 || s.Values["checkpoint_time"] != 0 || (i > 0 && s.Step != hist[i-1].Step+1) {
			t.Fatalf("sample %d: %+v", i, s)
		}
	}
}

// TestReadHistoryLongLine: a line longer than the old scanner's 4 MiB
// bound (a step with many per-head vitals, or a corrupt line) is read like
// any other through runlog.EachLine instead of ending the read, which left
// the monitor's windows empty after a resume.
func TestReadHistoryLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	var b []byte
	for s := 1; s <= 10; s++ {
		note := "x"
		if s == 5 {
			note = strings.Repeat("y", 5<<20)
		}
		b = fmt.Appendf(b, `{"step":%d,"train_loss_raw":%d.5,"note":"%s"}`+"\n", s, s, note)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	hist, err := readHistory(path, 100, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 10 || hist[4].Step != 5 || hist[9].Values["train_loss_raw"] != 10.5 {
		t.Fatalf("%d samples (%+v), want the 10 steps", len(hist), hist)
	}
}
