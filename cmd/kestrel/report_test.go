package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainAndReportCLI: `kestrel train --config configs/shakespeare-char.toml`
// (shortened to 40 steps of a smaller model, checkpoints every 20) leaves report/report.md
// with a verdict, plots and the samples of each checkpoint, and
// `kestrel report` rebuilds it; a directory that is not a run is refused.
func TestTrainAndReportCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shakespeare-char")
	execute := func(args ...string) (string, error) {
		root := newRootCmd()
		var out strings.Builder
		root.SetOut(&out)
		root.SetErr(&strings.Builder{})
		root.SetArgs(args)
		err := root.ExecuteContext(context.Background())
		return out.String(), err
	}
	out, err := execute("train", "--config", "../../configs/shakespeare-char.toml", "--out", dir,
		"--train.steps=40", "--checkpoint.every=20", "--train.eval_every=20", "--train.eval_batches=2", "--eval.tasks=[]",
		"--samples.tokens=24", "--monitor.trace_steps=0", "--model.d_model=32", "--model.n_heads=2", "--model.n_kv_heads=2", "--model.mlp_hidden=64", "--model.n_layers=1")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	report := filepath.Join(dir, "report", "report.md")
	if !strings.Contains(out, "report: "+report) {
		t.Errorf("train did not say where the report is:\n%s", out)
	}
	check := func(what string) {
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		md := string(b)
		for _, want := range []string{"## Verdict: **", "![loss](loss.png)", "### Prompt `ROMEO:`", "| 20 |", "| 40 |"} {
			if !strings.Contains(md, want) {
				t.Errorf("%s: report.md lacks %q", what, want)
			}
		}
	}
	check("after train")
	if err := os.Remove(report); err != nil {
		t.Fatal(err)
	}
	out, err = execute("report", dir)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if !strings.HasPrefix(out, "verdict: ") || !strings.Contains(out, "samples of 2 checkpoints") {
		t.Errorf("kestrel report printed:\n%s", out)
	}
	check("after kestrel report")
	if _, err := execute("report", t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a kestrel run directory") {
		t.Errorf("an empty directory: %v", err)
	}
}
