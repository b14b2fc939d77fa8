package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// TestRunBF16: kestrel eval --precision bf16 scores the same checkpoint
// with bf16 products (on the reference kernel, whatever the CPU): its bits
// per byte within 1% of fp32's and not equal to them; an unknown precision
// is refused naming the flag.
func TestRunBF16(t *testing.T) {
	t.Setenv(ops.BF16ReferenceEnv, "1")
	_, run := tinyModel(t)
	bpb := func(p string) float64 {
		res, err := Run(Options{Run: run, Tasks: []string{"bpb"}, Limit: 5, Precision: p})
		if err != nil {
			t.Fatal(err)
		}
		return res.BPB[0].BPB
	}
	f32, b16 := bpb("fp32"), bpb("bf16")
	if d := math.Abs(b16-f32) / f32; d > 0.01 || b16 == f32 {
		t.Errorf("bpb bf16 %g vs fp32 %g: want within 1%% and different", b16, f32)
	}
	if _, err := Run(Options{Run: run, Tasks: []string{"bpb"}, Precision: "int8"}); err == nil || !strings.Contains(err.Error(), "--precision") {
		t.Errorf("int8: %v", err)
	}
}
