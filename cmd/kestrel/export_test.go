package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// TestExportImportCLI: kestrel export writes a Hugging Face directory,
// kestrel import turns it into a config, and training with that config
// warm-starts from it with all 12 tensors (one layer, untied) copied. Bad flags are refused.
func TestExportImportCLI(t *testing.T) {
	cfg := tinyByteConfig(2)
	cfg.Train.ValFraction = 0.005 // the final evaluation reads every validation row
	runDir := trainTiny(t, cfg)
	hfDir := filepath.Join(t.TempDir(), "hf")
	exec := func(c *cobra.Command, args ...string) error {
		c.SilenceUsage, c.SilenceErrors = true, true
		c.SetArgs(args)
		return c.Execute()
	}
	var out strings.Builder
	ex := newExportCmd()
	ex.SetOut(&out)
	if err := exec(ex, "--run", runDir, "--hf", hfDir, "--checkpoint", "last"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "LlamaForCausalLM") {
		t.Errorf("export printed %q", out.String())
	}
	toml := filepath.Join(t.TempDir(), "run.toml")
	im := newImportCmd()
	im.SetOut(&out)
	if err := exec(im, "--hf", hfDir, "--out", toml, "--data.kind=bytes", "--data.train=${KESTREL_DATA}/tinyshakespeare/input.txt", "--train.steps=1", "--train.peak_gflops=10", "--train.val_fraction=0.005", "--train.batch_size=4"); err != nil {
		t.Fatal(err)
	}
	got, err := config.Load(toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Init.From, train.HFPrefix) || got.Init.Mode != "weights" || got.Model.DModel != cfg.Model.DModel {
		t.Errorf("imported config: init %+v, model %+v", got.Init, got.Model)
	}
	warm := filepath.Join(t.TempDir(), "warm")
	if _, err := run.Train(context.Background(), got, warm, run.Options{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(warm, "checkpoints", checkpoint.Name(1), checkpoint.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st checkpoint.State
	if err := json.Unmarshal(b, &st); err != nil || st.WarmStart == nil || len(st.WarmStart.Copied) != 12 || len(st.WarmStart.Initialized) != 0 {
		t.Errorf("warm-start report %+v (%v)", st.WarmStart, err)
	}
	for _, args := range [][]string{{"--run", runDir}, {"--hf", hfDir}, {"--run", runDir, "--hf", filepath.Join(t.TempDir(), "x"), "--checkpoint", "step-99"}} {
		c := newExportCmd()
		c.SetOut(&strings.Builder{})
		if err := exec(c, args...); err == nil {
			t.Errorf("export %v accepted", args)
		}
	}
	c := newImportCmd()
	if err := exec(c, "--hf", t.TempDir(), "--out", toml); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("import of an empty directory: %v", err)
	}
}
