package report

import (
	"os"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestWriteListsInterventions: the report has an Interventions section
// listing each rewind with what it changed.
func TestWriteListsInterventions(t *testing.T) {
	dir := t.TempDir()
	writeMetrics(t, dir, 100, 0)
	iv := &runlog.Intervention{ID: "rewind-1", Kind: "rewind", Time: "2026-11-23T16:00:00Z", FromStep: 90, ToStep: 60,
		SkipFrom: 65, SkipTo: 70, SkipSteps: 6, Set: map[string]string{"optim.max_grad_norm": "0.2"}, Reason: "spike | at 68",
		Checkpoint: "checkpoints/step-00000060", MetricsArchive: runlog.MetricsArchiveName("rewind-1")}
	if err := runlog.AppendIntervention(dir, iv); err != nil {
		t.Fatal(err)
	}
	sum, err := Write(Input{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Interventions", "| rewind-1 | 2026-11-23T16:00:00Z | 90 | 60 |", "skipped the batches of steps 65–70", "optim.max_grad_norm = 0.2", "spike \\| at 68", "metrics.archive-rewind-1.jsonl"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}

	// A run without interventions says so.
	dir2 := t.TempDir()
	writeMetrics(t, dir2, 50, 0)
	if sum, err = Write(Input{RunDir: dir2}); err != nil {
		t.Fatal(err)
	}
	if md, _ := os.ReadFile(sum.Path); !strings.Contains(string(md), "## Interventions\n\nNone") {
		t.Error("report.md of a run without interventions lacks the section")
	}
}
