package run

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// alertsWithBadLine writes an alerts.jsonl to dir: a SEV0 divergence at
// step 10, a torn line, a SEV1 loss spike at step 400.
func alertsWithBadLine(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "alerts.jsonl")
	b := runlog.AppendAlert(nil, &runlog.Alert{Step: 10, Severity: runlog.SEV0, Rule: "divergence", Action: "pause"})
	b = append(b, "{\"step\":2\n"...)
	b = runlog.AppendAlert(b, &runlog.Alert{Step: 400, Severity: runlog.SEV1, Rule: "loss_spike", Action: "contain"})
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadPriorSkipsBadAlertLines: checkpoint health keeps the earlier
// alerts around a bad line of alerts.jsonl and warns with the count (it
// used to drop them all, so an open incident was forgotten on resume).
func TestLoadPriorSkipsBadAlertLines(t *testing.T) {
	dir := t.TempDir()
	alertsWithBadLine(t, dir)
	var logs bytes.Buffer
	h := newHealthTrack(monitor.DefaultConfig())
	h.loadPrior(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if len(h.prior) != 2 || h.prior[0].Rule != "divergence" || h.prior[1].Rule != "loss_spike" {
		t.Fatalf("prior alerts %+v; want both good ones", h.prior)
	}
	if !strings.Contains(logs.String(), "skipped_lines=1") {
		t.Fatalf("warning %q does not count the skipped line", logs.String())
	}
}

// TestIncidentsSkipBadAlertLines: the incidents of the good alerts are
// listed, and the error then says how many lines were skipped (it used
// to fail whole); a person can still close one of them. (The table
// kestrel incidents prints of them: cmd/kestrel/internal/show.)
func TestIncidentsSkipBadAlertLines(t *testing.T) {
	dir := t.TempDir()
	p := alertsWithBadLine(t, dir)
	list, err := Incidents(dir)
	if runlog.SkippedLines(err) != 1 || len(list) != 2 || list[0].ID != "inc-10" || list[1].ID != "inc-400" {
		t.Fatalf("incidents %+v, %v; want inc-10 and inc-400 with one skipped line", list, err)
	}
	if !strings.Contains(err.Error(), p+":2:") || !strings.Contains(err.Error(), "1 bad line skipped") {
		t.Fatalf("Incidents: %v; want the skipped line named and counted", err)
	}
	if _, err := CloseIncident(dir, "inc-400", "looked at it"); err != nil {
		t.Fatalf("close among the good alerts: %v", err)
	}
}
