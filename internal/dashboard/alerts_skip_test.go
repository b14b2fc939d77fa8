package dashboard

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunInfoSkipsBadAlertLines: a bad line in alerts.jsonl is skipped
// and counted among the run's problems; the alerts after it are still
// shown, and a refresh keeps counting lines appended later.
func TestRunInfoSkipsBadAlertLines(t *testing.T) {
	ts, root := newTestServer(t)
	p := filepath.Join(root, "runs", "alpha", "alerts.jsonl")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"step\":\n" + `{"step":400,"severity":"SEV0","rule":"divergence","message":"m"}` + "\n")
	f.Close()
	var info RunInfo
	if err := json.Unmarshal(get(t, ts.URL+"/api/run?run=alpha", 200), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Alerts) != 2 || info.Alerts[1].Title != "divergence" {
		t.Fatalf("alerts %+v; want the spike and the divergence after the bad line", info.Alerts)
	}
	if !strings.Contains(strings.Join(info.Problems, "\n"), "alerts.jsonl: 1 unreadable lines skipped") || !strings.Contains(strings.Join(info.Problems, "\n"), p+":2:") {
		t.Fatalf("problems %q; want the skipped line counted and named", info.Problems)
	}
}
