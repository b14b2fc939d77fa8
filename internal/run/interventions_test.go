package run

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/rewind"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// stepLosses maps step → train_loss_raw text of a metrics file.
func stepLosses(t *testing.T, path string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		var s int
		if l, ok := m["train_loss_raw"]; ok && json.Unmarshal(m["step"], &s) == nil {
			out[s] = string(l)
		}
	}
	return out
}

func manifestAlerts(t *testing.T, dir string) []monitor.Alert {
	var out []monitor.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleManifest {
			out = append(out, a)
		}
	}
	return out
}

// TestRewindSetKnob: `rewind --set optim.max_grad_norm=0.05` takes effect
// at the step after the rewind point when the same config is trained on,
// raises no manifest_mismatch, and an unrelated config change afterwards
// still does.
func TestRewindSetKnob(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	cfg := tinyRun(12)
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 4, 5
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	orig := stepLosses(t, filepath.Join(dir, "metrics.jsonl"))

	for _, bad := range [][]string{{"model.d_model=64"}, {"optim.max_grad_norm=abc"}, {"optim.nope=1"}, {"optim.max_grad_norm"}} {
		if _, err := rewind.Rewind(dir, rewind.Options{To: "8", SetFlags: bad, CheckSet: CheckRewindSet}); err == nil {
			t.Errorf("--set %v accepted", bad)
		}
	}
	iv, err := rewind.Rewind(dir, rewind.Options{To: "8", Reason: "tighten clipping", SetFlags: []string{"optim.max_grad_norm=0.05"}, CheckSet: CheckRewindSet})
	if err != nil {
		t.Fatal(err)
	}
	if iv.ToStep != 8 || iv.Set["optim.max_grad_norm"] != "0.05" {
		t.Fatalf("intervention %+v", iv)
	}
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	got := stepLosses(t, filepath.Join(dir, "metrics.jsonl"))
	for s := 1; s <= 9; s++ { // step 9's loss is taken before its update
		if got[s] != orig[s] {
			t.Errorf("step %d: loss %s, was %s: the knob acted before the rewind point", s, got[s], orig[s])
		}
	}
	if got[10] == orig[10] || got[12] == orig[12] {
		t.Errorf("steps 10, 12: losses %s %s unchanged (%s %s): the knob did not take effect", got[10], got[12], orig[10], orig[12])
	}
	if a := manifestAlerts(t, dir); len(a) > 0 {
		t.Fatalf("a knob the intervention recorded raised %+v", a)
	}
	man, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := config.Hash(cfg)
	if man.BaseConfigHash != h || man.ConfigHash == h || len(man.Interventions) != 1 {
		t.Errorf("manifest base %s config %s interventions %v; user config %s", man.BaseConfigHash, man.ConfigHash, man.Interventions, h)
	}
	resolved, err := config.Load(filepath.Join(dir, "config.toml"), nil)
	if err != nil || resolved.Optim.MaxGradNorm != 0.05 {
		t.Errorf("config.toml max_grad_norm %g, %v", resolved.Optim.MaxGradNorm, err)
	}

	// An unrelated change of the config the user passes is still SEV1.
	cfg.Train.Steps = 16
	cfg.Optim.WeightDecay = 0.3
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	a := manifestAlerts(t, dir)
	if len(a) != 1 || a[0].Severity != monitor.SEV1 || !strings.Contains(a[0].Message, "config_hash") {
		t.Fatalf("an unexplained config change: alerts %+v, want one SEV1 naming config_hash", a)
	}
}

func TestParseSet(t *testing.T) {
	base := config.Default()
	for _, c := range []struct {
		flag string
		ok   bool
	}{
		{"optim.max_grad_norm=0.2", true},
		{"optim.qk_clip_tau=100", true},
		{"init.necromancy=1", true},
		{"init.from=/elsewhere", false},
		{"model.d_model=64", false},
		{"data.seed=3", false},
		{"optim.max_grad_norm=nan", false},
		{"optim.max_grad_norm=abc", false},
		{"optim.nope=1", false},
		{"=1", false},
		{"optim.lr", false},
	} {
		_, err := ParseSet([]string{c.flag}, base)
		if (err == nil) != c.ok {
			t.Errorf("--set %s: err %v, want ok %v", c.flag, err, c.ok)
		}
	}
}

// TestRewindSetOptimizerSwap: `rewind --to 8 --set optim.name=muon` on an
// AdamW run swaps the optimizer at the checkpoint: the intervention is
// recorded, the steps up to the rewind point are unchanged and the ones
// after it differ, the manifest's start records the swap, the resolved
// config and the checkpoints after it name Muon, and no manifest_mismatch
// fires.
func TestRewindSetOptimizerSwap(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	cfg := tinyRun(12)
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 4, 5
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	orig := stepLosses(t, filepath.Join(dir, "metrics.jsonl"))
	iv, err := rewind.Rewind(dir, rewind.Options{To: "8", Reason: "swap to Muon", SetFlags: []string{"optim.name=muon"}, CheckSet: CheckRewindSet})
	if err != nil {
		t.Fatal(err)
	}
	if iv.Set["optim.name"] != "muon" {
		t.Fatalf("intervention %+v", iv)
	}
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	got := stepLosses(t, filepath.Join(dir, "metrics.jsonl"))
	for s := 1; s <= 9; s++ { // step 9's loss is taken before its update
		if got[s] != orig[s] {
			t.Errorf("step %d: loss %s, was %s: the swap acted before the rewind point", s, got[s], orig[s])
		}
	}
	if got[10] == orig[10] || got[12] == orig[12] {
		t.Errorf("steps 10, 12: losses %s %s unchanged: the swap did not take effect", got[10], got[12])
	}
	if a := manifestAlerts(t, dir); len(a) > 0 {
		t.Errorf("the recorded swap raised %+v", a)
	}
	man, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if last := man.Starts[len(man.Starts)-1]; last.OptimizerSwap != "adamw→muon at step 8" {
		t.Errorf("manifest's last start %+v, want optimizer_swap adamw→muon at step 8", last)
	}
	resolved, err := config.Load(filepath.Join(dir, "config.toml"), nil)
	if err != nil || resolved.Optim.Name != "muon" {
		t.Errorf("config.toml optim.name %q, %v", resolved.Optim.Name, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "checkpoints", "step-00000012", "state.json"))
	if err != nil || !strings.Contains(string(b), `"optimizer": "muon"`) && !strings.Contains(string(b), `"optimizer":"muon"`) {
		t.Errorf("checkpoint at 12's state.json names no Muon optimizer (%v)", err)
	}
}
