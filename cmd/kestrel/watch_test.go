package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/monitor"
)

// TestWatchSyntheticJSONL runs kestrel watch on another trainer's JSONL
// with a planted loss spike (step 200) and a planted NaN (step 300).
func TestWatchSyntheticJSONL(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "train_log.jsonl")
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for s := 1; s <= 320; s++ {
		loss := fmt.Sprintf("%.5f", 3+2*math.Exp(-float64(s)/200)+0.01*rng.NormFloat64())
		switch s {
		case 200:
			loss = "6.5"
		case 300:
			loss = "NaN"
		}
		fmt.Fprintf(&b, `{"iter": %d, "loss": %s, "gnorm": %.4f, "sources": ["web"], "doc_ids": ["d%d"]}`+"\n", s, loss, 0.5+0.01*rng.NormFloat64(), s)
	}
	os.WriteFile(src, []byte(b.String()), 0o644)
	store := filepath.Join(dir, "out.sqlite")
	outDir := filepath.Join(dir, "watch")
	cmd := newWatchCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{src, "--map", "step=iter", "--map", "train_loss_raw=loss", "--map", "grad_global_norm=gnorm",
		"--store", store, "--out", outDir, "--monitor.spike_follow=20", "--allow-sev0"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"SEV1 loss_spike", "step 200", "SEV0 nan_inf", "step 300", "loss_spike_verdict", "recoverable", "[evidence "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	samples, alerts, err := monitor.ReadStore(store)
	if err != nil || len(samples) != 320 || len(alerts) < 3 {
		t.Fatalf("store: %d samples, %d alerts, %v", len(samples), len(alerts), err)
	}
	if fs, _ := filepath.Glob(filepath.Join(outDir, "incidents", "*-nan_inf", "batches.jsonl")); len(fs) != 1 {
		t.Errorf("no incident bundle: %v", fs)
	}
	// A bad mapping flag is an error naming it.
	cmd = newWatchCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{src, "--map", "loss"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `--map "loss"`) {
		t.Errorf("bad --map: %v", err)
	}
}

// runWatchCmd runs kestrel watch with args and returns its output and error.
func runWatchCmd(args ...string) (string, error) {
	cmd := newWatchCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestWatchNoFalseAllClear: a nanoGPT-style log needs no --map for its 16×
// spike to be raised; a bad line is skipped and reported, and the watch
// then exits non-zero unless --allow-bad; a SEV0 exits
// non-zero unless --allow-sev0; a source without a loss is an error.
func TestWatchNoFalseAllClear(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, line func(s int) string) string {
		var b strings.Builder
		for s := 1; s <= 260; s++ {
			b.WriteString(line(s))
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rng := rand.New(rand.NewPCG(3, 4))
	loss := func(s int) float64 { return 3 + 2*math.Exp(-float64(s)/200) + 0.01*rng.NormFloat64() }
	nano := write("nanogpt.jsonl", func(s int) string {
		l := loss(s)
		if s == 200 {
			l *= 16
		}
		line := fmt.Sprintf(`{"iter": %d, "loss": %.4f, "lr": 0.0006}`+"\n", s, l)
		if s == 120 {
			line = "{\"iter\": 120, \"loss\": \n" + line
		}
		return line
	})
	text, err := runWatchCmd(nano)
	if err == nil || !strings.Contains(err.Error(), "--allow-bad") || !strings.Contains(text, "INCOMPLETE") {
		t.Errorf("a watch that skipped a line: err %v; want a non-zero exit naming --allow-bad and an INCOMPLETE summary\n%s", err, text)
	}
	text, err = runWatchCmd(nano, "--allow-bad")
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	for _, want := range []string{"SEV1 loss_spike", "step 200", "watch: 260 samples; 0 SEV0, ", "1 bad lines or records skipped (first: " + nano + ":120: "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	nan := write("nan.jsonl", func(s int) string {
		if s == 250 {
			return fmt.Sprintf(`{"iter": %d, "loss": NaN}`+"\n", s)
		}
		return fmt.Sprintf(`{"iter": %d, "loss": %.4f}`+"\n", s, loss(s))
	})
	if text, err := runWatchCmd(nan); err == nil || !strings.Contains(err.Error(), "SEV0") || !strings.Contains(text, "SEV0 nan_inf") {
		t.Errorf("SEV0 run: err %v\n%s", err, text)
	}
	if text, err := runWatchCmd(nan, "--allow-sev0"); err != nil || !strings.Contains(text, "SEV0 nan_inf") {
		t.Errorf("--allow-sev0: err %v\n%s", err, text)
	}

	noloss := write("noloss.jsonl", func(s int) string { return fmt.Sprintf(`{"iter": %d, "objective": %.4f}`+"\n", s, loss(s)) })
	if _, err := runWatchCmd(noloss); err == nil || !strings.Contains(err.Error(), "no loss metric recognised (fields seen: iter, objective)") {
		t.Errorf("no loss: %v", err)
	}
}
