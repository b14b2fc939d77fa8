package generate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// TestGenerateBF16: --precision bf16 samples from the same checkpoint
// (on the reference kernel, whatever the CPU), deterministically for a
// seed; an unknown precision is refused naming the flag.
func TestGenerateBF16(t *testing.T) {
	t.Setenv(ops.BF16ReferenceEnv, "1")
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, tinyConfig(256, 3), "", run)
	o := Options{Prompt: "To be", Temperature: 0.8, TopK: 200, TopP: 1, Tokens: 20, Seed: 1, Precision: "bf16"}
	a, err := Generate(run, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(run, o)
	if err != nil || a != b || !strings.HasPrefix(a, "To be") || len(a) != len("To be")+20 {
		t.Fatalf("bf16 samples %q, %q (%v): want the prompt and 20 bytes, twice the same", a, b, err)
	}
	o.Precision = "fp16"
	if _, err := Generate(run, o); err == nil || !strings.Contains(err.Error(), "--precision") {
		t.Errorf("fp16: %v", err)
	}
}
