package watchsrc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/monitor"
)

// TestFollowBlackout: a followed source that stops writing raises SEV0
// monitoring_blackout once it has been silent for max(blackout_factor ×
// its median interval, blackout_min_seconds); one that keeps growing
// raises nothing, and neither does a kestrel run that wrote the checkpoint
// its trainer writes as it exits.
func TestFollowBlackout(t *testing.T) {
	const (
		every = 20 * time.Millisecond
		floor = 0.5 // s: well above the writer's 20 ms pace
	)
	for _, tc := range []struct {
		name      string
		writeFor  time.Duration // how long the writer appends
		watchFor  time.Duration // how long the watch follows (from the start)
		withTime  bool          // records carry their own time
		final     string        // the checkpoint kind written last ("": none)
		wantAlert bool
	}{
		{"stops writing", 300 * time.Millisecond, 5 * time.Second, true, "", true},
		{"stops writing, no time field", 300 * time.Millisecond, 5 * time.Second, false, "", true},
		{"keeps writing", 1200 * time.Millisecond, 1200 * time.Millisecond, true, "", false},
		{"kestrel run finished", 300 * time.Millisecond, 1500 * time.Millisecond, true, "final", false},
		{"kestrel run stopped at train.max_minutes", 300 * time.Millisecond, 1500 * time.Millisecond, false, "time_limit", false},
		{"a rolling checkpoint is no end", 300 * time.Millisecond, 5 * time.Second, true, "rolling", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "train.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			step := 0
			write := func() {
				step++
				line := fmt.Sprintf(`{"step": %d, "loss": %g`, step, 3-0.001*float64(step))
				if tc.withTime {
					line += fmt.Sprintf(`, "time": %.3f`, float64(time.Now().UnixNano())/1e9)
				}
				if _, err := f.WriteString(line + "}\n"); err != nil {
					t.Error(err)
				}
			}
			for range 5 { // a backlog read at once
				write()
			}
			cfg := testConfig()
			cfg.BlackoutFactor, cfg.BlackoutMinSeconds = 10, floor
			m := newTestMonitor(t, cfg, t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), tc.watchFor)
			defer cancel()
			var mu sync.Mutex
			var alerts []monitor.Alert
			var at []time.Time
			var stopped time.Time
			done := make(chan struct{})
			go func() {
				defer close(done)
				end := time.Now().Add(tc.writeFor)
				for time.Now().Before(end) {
					time.Sleep(every)
					write()
				}
				if tc.final != "" {
					fmt.Fprintf(f, `{"step": %d, "event": "checkpoint", "checkpoint_kind": %q, "checkpoint_ok": 1}`+"\n", step, tc.final)
				}
				mu.Lock()
				stopped = time.Now()
				mu.Unlock()
			}()
			_, err = Watch(ctx, path, Options{Follow: true, Poll: 10 * time.Millisecond}, m, func(a monitor.Alert) {
				mu.Lock()
				defer mu.Unlock()
				if a.Rule == monitor.RuleBlackout {
					alerts = append(alerts, a)
					at = append(at, time.Now())
					cancel() // seen: stop following
				}
			})
			<-done
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !tc.wantAlert {
				if len(alerts) != 0 {
					t.Errorf("a growing source raised %+v", alerts)
				}
				return
			}
			if len(alerts) != 1 {
				t.Fatalf("%d monitoring_blackout alerts, want 1", len(alerts))
			}
			a := alerts[0]
			if a.Severity != monitor.SEV0 || a.Step != int64(step) || a.Value <= floor || a.Runbook == "" {
				t.Errorf("alert %+v (want SEV0 at the last step %d, silent > %g s)", a, step, floor)
			}
			if d := at[0].Sub(stopped); d < time.Duration(floor*float64(time.Second)) {
				t.Errorf("alert %v after the writer stopped, before the %g s floor", d, floor)
			}
		})
	}
}

// TestFollowDeadlineIsNoError: a follow whose context deadline passes
// while a sample is being observed (here: before the first one) ends
// without an error, as one whose deadline passes between polls does; a
// one-shot read keeps the error.
func TestFollowDeadlineIsNoError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.jsonl")
	if err := os.WriteFile(path, []byte("{\"step\": 1, \"loss\": 3}\n{\"step\": 2, \"loss\": 2.9}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, follow := range []bool{true, false} {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		m := newTestMonitor(t, testConfig(), t.TempDir())
		_, err := Watch(ctx, path, Options{Follow: follow, Poll: 10 * time.Millisecond}, m, nil)
		cancel()
		if follow && err != nil {
			t.Errorf("follow past its deadline: %v, want no error", err)
		}
		if !follow && err == nil {
			t.Error("one-shot read past its deadline: no error")
		}
	}
}
