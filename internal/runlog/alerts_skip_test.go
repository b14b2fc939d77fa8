//go:build unix

package runlog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadAlertsSkipsBadLines: bad lines of alerts.jsonl (not JSON, not an
// alert, over the line bound) are skipped and counted, and every good
// alert around them is returned; the error names the first bad line. The
// old reader stopped at the first bad line, so its callers lost every
// alert after it (and health.go every alert).
func TestReadAlertsSkipsBadLines(t *testing.T) {
	good := func(step int64) string {
		return string(AppendAlert(nil, &Alert{Step: step, Severity: SEV1, Rule: "loss_spike", Action: "contain"}))
	}
	long := `{"pad":"` + strings.Repeat("x", maxLineBytes) + "\"}\n"
	tests := []struct {
		name      string
		body      string
		steps     []int64
		skipped   int
		firstLine string
	}{
		{"clean", good(1) + good(2), []int64{1, 2}, 0, ""},
		{"one bad in the middle", good(1) + "{\"step\":2,\n" + good(3), []int64{1, 3}, 1, ":2: "},
		{"bad severity and a long line", good(1) + `{"step":2,"severity":"SEV9","rule":"x"}` + "\n" + good(3) + long + good(5), []int64{1, 3, 5}, 2, ":2: field severity"},
		{"all bad", "nope\n{}\n", nil, 2, ":1: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "alerts.jsonl")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			as, err := ReadAlerts(p)
			var steps []int64
			for _, a := range as {
				steps = append(steps, a.Step)
			}
			if !slices.Equal(steps, tc.steps) {
				t.Fatalf("alerts at steps %v, want %v (err %v)", steps, tc.steps, err)
			}
			if got := SkippedLines(err); got != tc.skipped {
				t.Fatalf("SkippedLines = %d, want %d (err %v)", got, tc.skipped, err)
			}
			if tc.skipped == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var sk *SkippedLinesError
			if !errors.As(err, &sk) || !strings.Contains(err.Error(), p+tc.firstLine) {
				t.Fatalf("error %v; want a *SkippedLinesError naming %s%s", err, p, tc.firstLine)
			}
		})
	}
}

// TestReadAlertsFromCountsItsCall: an incremental read counts the bad
// lines after its offset only, with their line numbers from the file's
// start.
func TestReadAlertsFromCountsItsCall(t *testing.T) {
	p := filepath.Join(t.TempDir(), "alerts.jsonl")
	first := string(AppendAlert(nil, &Alert{Step: 1, Severity: SEV2, Rule: "r"})) + "bad\n"
	if err := os.WriteFile(p, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	as, next, err := ReadAlertsFrom(p, 0)
	if len(as) != 1 || SkippedLines(err) != 1 || next != int64(len(first)) {
		t.Fatalf("first read: %d alerts to %d, %v", len(as), next, err)
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(string(AppendAlert(nil, &Alert{Step: 2, Severity: SEV2, Rule: "r"})) + "bad again\n")
	f.Close()
	as, _, err = ReadAlertsFrom(p, next)
	if len(as) != 1 || as[0].Step != 2 || SkippedLines(err) != 1 || !strings.Contains(err.Error(), p+":4:") {
		t.Fatalf("second read: %+v, %v; want step 2 and line 4 skipped", as, err)
	}
}

// TestReadAlertsFIFO: a FIFO as alerts.jsonl is refused at once, naming
// it, and is not a skipped line (the old reader waited on it forever).
func TestReadAlertsFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "alerts.jsonl")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadAlerts(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || SkippedLines(err) != 0 || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("err %v; want a refusal naming the FIFO", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadAlerts hung on a FIFO")
	}
}
