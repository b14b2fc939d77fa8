package dashboard

import (
	"database/sql"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/monitor"
)

// writeStore appends steps [from, to] to the metrics store at path, with an
// alert at step alertAt (0: none).
func writeStore(t *testing.T, path string, from, to, alertAt int64) {
	t.Helper()
	st, err := monitor.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	for s := from; s <= to; s++ {
		vals := map[string]float64{"train_loss_raw": 5 - float64(s)/100, "grad_global_norm": 1 + float64(s%7)/10}
		if s == 3 {
			vals["train_loss_raw"] = math.NaN() // stored as null: a gap, not a bad row
		}
		if err := st.WriteSample(&monitor.Sample{Step: s, Tokens: 1000 * s, Time: t0.Add(time.Duration(s) * time.Second), Values: vals}); err != nil {
			t.Fatal(err)
		}
		if s == alertAt {
			if err := st.WriteAlert(&monitor.Alert{Step: s, Tokens: 1000 * s, Severity: monitor.SEV1, Rule: "loss_spike", Metric: "train_loss_raw", Value: 9, Threshold: 6, Message: "loss spiked", Runbook: "Contain: rewind"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStoreOnlyRun: a run directory holding only metrics.sqlite (what
// `kestrel watch --store` writes for another trainer's run) is served like a
// metrics.jsonl run — metrics on every axis, alerts as events — and rows
// added later are picked up.
func TestStoreOnlyRun(t *testing.T) {
	runs := t.TempDir()
	store := filepath.Join(runs, "other-trainer", "metrics.sqlite")
	if err := os.MkdirAll(filepath.Dir(store), 0o755); err != nil {
		t.Fatal(err)
	}
	writeStore(t, store, 1, 50, 40)
	srv, err := New(runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	var list []RunSummary
	if err := json.Unmarshal(get(t, ts.URL+"/api/runs", 200), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "other-trainer" || list[0].LastStep != 50 || list[0].Alerts != 1 {
		t.Fatalf("runs: %+v", list)
	}
	for _, x := range []string{"step", "tokens", "time"} {
		var m metricsResp
		if err := json.Unmarshal(get(t, ts.URL+"/api/metrics?run=other-trainer&names=train_loss_raw,grad_global_norm&x="+x, 200), &m); err != nil {
			t.Fatal(err)
		}
		// Step 3's loss was NaN (null in the store): that point is left out,
		// as for a metrics.jsonl row without the value.
		loss := m.Series["train_loss_raw"]
		if loss == nil || loss.N != 49 || len(loss.X) != 49 {
			t.Fatalf("x=%s: loss series %+v", x, loss)
		}
		if g := m.Series["grad_global_norm"]; g == nil || g.N != 50 {
			t.Fatalf("x=%s: grad norm series %+v", x, g)
		}
		// Row of step 10 is the 9th loss point; time is seconds since the first row.
		want := map[string]float64{"step": 10, "tokens": 10000, "time": 9}[x]
		if loss.X[8] != want || loss.Y[8] == nil || math.Abs(*loss.Y[8]-4.9) > 1e-6 {
			t.Fatalf("x=%s: 9th loss point is (%v, %v), want (%v, 4.9)", x, loss.X[8], loss.Y[8], want)
		}
	}
	var evs []Event
	if err := json.Unmarshal(get(t, ts.URL+"/api/events?run=other-trainer", 200), &evs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		if e.Kind == "alert" && e.Step == 40 && e.Severity == "SEV1" && e.Title == "loss_spike" && e.Runbook != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("store alert not among events: %+v", evs)
	}

	// The trainer goes on: new rows and alerts appear without a restart.
	writeStore(t, store, 51, 80, 75)
	if err := json.Unmarshal(get(t, ts.URL+"/api/runs", 200), &list); err != nil {
		t.Fatal(err)
	}
	if list[0].LastStep != 80 || list[0].Alerts != 2 {
		t.Fatalf("after appending: %+v", list[0])
	}
}

// TestStoreNotAKestrelStore: a metrics.sqlite without the samples table is
// refused with an error naming the file, not served as an empty run.
func TestStoreNotAKestrelStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.sqlite")
	db, err := sql.Open("sqlite", path) // driver registered by runlog
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE other(x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := &Run{Name: "x", Dir: dir, data: newRunData(dir)}
	err = r.refresh()
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("refresh of a foreign sqlite file: %v", err)
	}
}
