package main

import (
	"context"
	"io"
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
	if _, err := runTraining(context.Background(), cfg, runDir, trainRunOptions{stdout: io.Discard, stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	srv, err := dashboard.New("", []string{runDir})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	shot := filepath.Join(t.TempDir(), "dash-real-run.jpg")
	browsertest.Check(t, ts.URL+"/", shot, []string{"val", "train", "grad", "update", "u2w", "lr", "tps", "steptime", "mfu", "maxlogit", "entropy", "maxlogitL-0", "entropyL-1", "resid", "outlier", "stall"})
	if _, err := os.Stat(shot); err != nil {
		t.Fatal(err)
	}
}
