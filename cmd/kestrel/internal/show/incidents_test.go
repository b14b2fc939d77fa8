package show

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestIncidentsSkipBadAlertLines: the incidents of the good alerts of an
// alerts.jsonl with a torn line are printed, and the listing then says how
// many lines were skipped, naming the file and line (it used to fail
// whole); any other read error is returned before anything is printed.
func TestIncidentsSkipBadAlertLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "alerts.jsonl")
	b := runlog.AppendAlert(nil, &runlog.Alert{Step: 10, Severity: runlog.SEV0, Rule: "divergence", Action: "pause"})
	b = append(b, "{\"step\":2\n"...)
	b = runlog.AppendAlert(b, &runlog.Alert{Step: 400, Severity: runlog.SEV1, Rule: "loss_spike", Action: "contain"})
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := run.Incidents(dir)
	if runlog.SkippedLines(err) != 1 || len(list) != 2 {
		t.Fatalf("incidents %+v, %v; want two with one skipped line", list, err)
	}
	var out bytes.Buffer
	werr := Incidents(&out, dir, list, err, false)
	if !strings.Contains(out.String(), "inc-10") || !strings.Contains(out.String(), "inc-400") {
		t.Fatalf("table lost the incidents:\n%s", out.String())
	}
	if werr == nil || !strings.Contains(werr.Error(), p+":2:") || !strings.Contains(werr.Error(), "1 bad line skipped") {
		t.Fatalf("Incidents: %v; want the skipped line named and counted", werr)
	}
	out.Reset()
	if err := Incidents(&out, dir, nil, os.ErrPermission, false); err == nil || !strings.Contains(err.Error(), "permission") || out.Len() != 0 {
		t.Fatalf("a read error must be returned before anything is printed: %v, printed %q", err, out.String())
	}
}
