package train

import (
	"testing"
	"math"

	"github.com/kestrel-lm/kestrel/internal/model"
)

func TestZZDeterminism(t *testing.T) {
	c := model.DefaultConfig()
	c.Tied = true
	data := corpus()
	src := NewBytesSource(data, data, 64, 1)
	in, tg := make([]int32, 12*64), make([]int32, 12*64)
	src.Fill(1, 12, 0, 12, in, tg, nil, nil)
	var ref []float32
	var refLoss float64
	for trial := 0; trial < 6; trial++ {
		n, _ := NewModelNet(c, 1)
		n.ZeroGrads()
		st, _ := n.ForwardBackward(&model.Batch{B: 12, T: 64, Inputs: in, Targets: tg}, 1)
		if trial == 0 {
			ref = append([]float32(nil), n.Grads()...)
			refLoss = st.Loss
			continue
		}
		nd := 0
		first := ""
		for _, x := range n.Tensors() {
			for i := x.Offset; i < x.Offset+x.Size; i++ {
				if math.Float32bits(n.Grads()[i]) != math.Float32bits(ref[i]) {
					nd++
					if first == "" { first = x.Name }
				}
			}
		}
		t.Logf("trial %d: loss equal %v (%v vs %v), grads differing %d first %s", trial, st.Loss == refLoss, st.Loss, refLoss, nd, first)
	}
}
