package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShuffleReportSynthetic runs the command end to end: a table naming
// every permutation, JSON lines with the statistics, and a PNG file; a bad
// flag fails without touching an existing plot.
func TestShuffleReportSynthetic(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "r.png")
	run := func(args ...string) (string, error) {
		cmd := newDataShuffleReportCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--synthetic", "--items", "50000", "--steps", "300", "--lcg-stride", "3", "--out", png)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"feistel ", "feistel-mix", "lcg stride 3", "plot: " + png} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("plot %s: %v (%d bytes)", png, err, len(b))
	}
	out, err = run("--synthetic", "--items", "50000", "--steps", "300", "--permutation", "lcg", "--lcg-stride", "3", "--json", "--out", "")
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rec); err != nil {
		t.Fatalf("JSON line: %v\n%s", err, out)
	}
	if rec["lag1_acf"].(float64) < 0.9 || rec["max_dominated_run"].(float64) < 20 {
		t.Fatalf("lcg stride 3 shows no phases: %v", rec)
	}
	if _, err := run("--synthetic", "--permutation", "shuffle", "--out", png); err == nil || !strings.Contains(err.Error(), "shuffle") {
		t.Fatalf("bad --permutation: got %v", err)
	}
	if b2, _ := os.ReadFile(png); !bytes.Equal(b, b2) {
		t.Fatal("a failed run changed the existing plot")
	}
	if _, err := run("--out", png); err == nil || !strings.Contains(err.Error(), "--dataset") {
		t.Fatalf("no dataset: got %v", err)
	}
}
