package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// PrecisionSetter is a Net whose matrix products can run in bf16
// (train.precision); NewModelNet's nets are.
type PrecisionSetter interface {
	SetPrecision(ops.Precision)
}

// SetPrecision makes the products of m's passes run in precision p.
func (n modelNet) SetPrecision(p ops.Precision) { n.m.SetPrecision(p) }

// setPrecision applies train.precision to net: fp32 leaves it as built (bit
// for bit today's arithmetic); bf16 is refused on a CPU without bf16
// hardware (naming the missing feature, ops.Precision.Check) and by a
// network that cannot run it.
func setPrecision(net Net, name string) (ops.Precision, error) {
	p, err := ops.ParsePrecision(name)
	if err != nil {
		return p, fmt.Errorf("train.precision: %w", err)
	}
	if p == ops.FP32 {
		return p, nil
	}
	if err := p.Check(); err != nil {
		return p, fmt.Errorf("train.precision: %w", err)
	}
	ps, ok := net.(PrecisionSetter)
	if !ok {
		return p, fmt.Errorf("train.precision: %q needs a network that runs bf16 products (%T does not)", name, net)
	}
	ps.SetPrecision(p)
	return p, nil
}
