package run

import (
	"context"

	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/dashboard"
	"github.com/kestrel-lm/kestrel/internal/dashboard/browsertest"
)

// TestDashboardOnRealRun trains a short byte-level run with the monitor on,
// then loads it in headless Chromium: every seed-000 panel must draw the
// run's own data, and switching the x-axis to tokens must work.
func TestDashboardOnRealRun(t *testing.T) {
	browsertest.Chromium(t)
	cfg := config.Default()
	for _, o := range []config.Override{
		{Path: "train.steps", Value: "80"}, {Path: "train.eval_every", Value: "20"}, {Path: "train.eval_batches", Value: "4"},
		{Path: "checkpoint.every", Value: "40"}, {Path: "model.d_model", Value: "64"}, {Path: "model.mlp_hidden", Value: "128"},
		{Path: "model.n_layers", Value: "2"}, {Path: "model.seq_len", Value: "32"}, {Path: "optim.warmup_steps", Value: "10"},
	} {
		if err := o.Apply(&cfg); err != nil {
			t.Fatal(err)
		}
	}
	runDir := filepath.Join(t.TempDir(), "runs", "shakespeare-tiny")
	if _, err := Train(context.Background(), cfg, runDir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	srv, err := dashboard.New("", []string{runDir})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	shot := filepath.Join(t.TempDir(), "dash-real-run.jpg")
	browsertest.Check(t, ts.URL+"/", shot, []string{"val", "train", "grad", "update", "u2w", "lr", "tps", "steptime", "mfu", "maxlogit", "entropy", "maxlogitL-0", "entropyL-1", "resid", "outlier", "stall", "probe", "kl", "probeent"})
	if _, err := os.Stat(shot); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardScreenshotOfRun refreshes the screenshot in docs/: it runs
// only when KESTREL_SCREENSHOT_RUN names a run directory (for example
// runs/demo after `make demo`) and KESTREL_SCREENSHOT_DIR where to write
// dashboard.png; the same checks as on the test run apply.
//
//	KESTREL_SCREENSHOT_RUN=$PWD/runs/demo KESTREL_SCREENSHOT_DIR=$PWD/docs/img \
//	  go test -run DashboardScreenshotOfRun ./cmd/kestrel
func TestDashboardScreenshotOfRun(t *testing.T) {
	run := os.Getenv("KESTREL_SCREENSHOT_RUN")
	if run == "" || os.Getenv("KESTREL_SCREENSHOT_DIR") == "" {
		t.Skip("set KESTREL_SCREENSHOT_RUN and KESTREL_SCREENSHOT_DIR to refresh the docs screenshot")
	}
	srv, err := dashboard.New("", []string{run})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	browsertest.Check(t, ts.URL+"/", filepath.Join(t.TempDir(), "dashboard.png"), []string{"val", "train", "grad", "update", "lr", "tps", "mfu", "maxlogit", "entropy"})
}
