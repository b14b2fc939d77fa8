package ops

import (
	"fmt"
	"os"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// Precision is the arithmetic of an op's matrix products. FP32 multiplies
// the float32 operands as given (kernels.Sgemm). BF16 rounds both operands
// of every product to bfloat16 (round to nearest, ties to even) and sums the
// products in float32 (kernels.SgemmBF16): the Marin recipe's "compute in
// bf16" with the weights, the optimizer, the loss, the softmax statistics
// and the norms' reductions left in float32 by their callers.
type Precision uint8

const (
	// FP32 is float32 products, the default: bit for bit what the ops
	// compute without a Precision.
	FP32 Precision = iota
	// BF16 is bfloat16 inputs with float32 accumulation.
	BF16
)

// String is the precision's config spelling: "fp32" or "bf16".
func (p Precision) String() string {
	if p == BF16 {
		return "bf16"
	}
	return "fp32"
}

// ParsePrecision reads a precision's config spelling ("fp32" or "bf16").
func ParsePrecision(s string) (Precision, error) {
	switch s {
	case "fp32", "":
		return FP32, nil
	case "bf16":
		return BF16, nil
	}
	return FP32, fmt.Errorf("precision %q: want \"fp32\" or \"bf16\"", s)
}

// Sgemm is kernels.Sgemm in this precision (kernels.SgemmBF16 for BF16).
func (p Precision) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if p == BF16 {
		kernels.SgemmBF16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	kernels.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// MatmulForward is MatmulForward in this precision.
func (p Precision) MatmulForward(y, x, w []float32, N, in, out int, accumulate bool) {
	p.MatmulForwardStrided(y, out, x, w, N, in, out, accumulate)
}

// MatmulForwardStrided is MatmulForwardStrided in this precision.
func (p Precision) MatmulForwardStrided(y []float32, ldy int, x, w []float32, N, in, out int, accumulate bool) {
	if p != BF16 {
		MatmulForwardStrided(y, ldy, x, w, N, in, out, accumulate)
		return
	}
	var beta float32
	if accumulate {
		beta = 1
	}
	kernels.SgemmBF16(false, true, N, out, in, 1, x, in, w, in, beta, y, ldy)
}

// MatmulBackward is MatmulBackward in this precision: in BF16 both the
// input gradient dy·W and the weight gradient dyᵀ·x take bf16 inputs; dw
// accumulates in float32.
func (p Precision) MatmulBackward(dx, dw, dy, x, w []float32, N, in, out int, accumulate bool) {
	p.MatmulBackwardStridedBeta(dx, dw, dy, out, x, w, N, in, out, accumulate, 1)
}

// MatmulBackwardBeta is MatmulBackward with dW = dyᵀ·x + wBeta·dW (0:
// written without being read; 1: added), in this precision.
func (p Precision) MatmulBackwardBeta(dx, dw, dy, x, w []float32, N, in, out int, accumulate bool, wBeta float32) {
	p.MatmulBackwardStridedBeta(dx, dw, dy, out, x, w, N, in, out, accumulate, wBeta)
}

// MatmulBackwardStrided is MatmulBackwardStrided in this precision.
func (p Precision) MatmulBackwardStrided(dx, dw, dy []float32, ldy int, x, w []float32, N, in, out int, accumulate bool) {
	p.MatmulBackwardStridedBeta(dx, dw, dy, ldy, x, w, N, in, out, accumulate, 1)
}

// MatmulBackwardStridedBeta is MatmulBackwardStridedBeta in this precision.
func (p Precision) MatmulBackwardStridedBeta(dx, dw, dy []float32, ldy int, x, w []float32, N, in, out int, accumulate bool, wBeta float32) {
	matmulBackward(dx, dw, dy, ldy, x, w, N, in, out, accumulate, wBeta, p == BF16)
}

// BF16ReferenceEnv names the environment variable that, set to "1", lets
// BF16 run on a CPU without bf16 hardware on the reference kernel (rounded
// copies on the float32 GEMM: right results, float32 speed or less). It is
// for tests, whose CPU is not known in advance; a run that sets it records
// bf16_impl "reference" in its manifest.
const BF16ReferenceEnv = "KESTREL_BF16_REFERENCE"

// bf16Hardware is kernels.BF16Hardware; tests replace it.
var bf16Hardware = kernels.BF16Hardware

// Check reports whether this CPU may run products in precision p: FP32
// always; BF16 when the CPU multiplies bf16 in hardware
// (kernels.BF16Hardware) or the environment sets BF16ReferenceEnv=1. The
// error names the missing CPU feature.
func (p Precision) Check() error {
	if p != BF16 {
		return nil
	}
	ok, missing := bf16Hardware()
	if ok || os.Getenv(BF16ReferenceEnv) == "1" {
		return nil
	}
	return fmt.Errorf("precision bf16: this CPU lacks %s (no bf16 dot-product instruction); use precision \"fp32\" (%s=1 runs bf16 on the slow reference kernel, for tests)", missing, BF16ReferenceEnv)
}

// Resolve reads a precision's spelling (ParsePrecision) and checks that
// this CPU may run it (Check): what a command's --precision flag needs.
func Resolve(name string) (Precision, error) {
	p, err := ParsePrecision(name)
	if err != nil {
		return p, err
	}
	return p, p.Check()
}
