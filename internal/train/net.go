package train

import "github.com/kestrel-lm/kestrel/internal/model"

// Net is what the loop trains: *model.Model through NewModelNet, or a small
// stand-in in tests. Params and Grads are flat buffers laid out by Tensors.
type Net interface {
	Params() []float32
	Grads() []float32
	Tensors() []model.Tensor
	// ZeroGrads clears Grads and starts a step's accumulation.
	ZeroGrads()
	// StartAccumulation starts a step's accumulation without the clear:
	// the next ForwardBackward writes Grads, the ones after it add.
	StartAccumulation()
	// ForwardBackward adds scale·∂loss/∂θ to Grads (writes it, right
	// after StartAccumulation).
	ForwardBackward(b *model.Batch, scale float32) (model.Stats, error)
	Forward(b *model.Batch) (model.Stats, error)
	// Vitals reports the health numbers of the last forward pass (nil if none).
	Vitals() *model.Vitals
	FLOPsPerToken() float64
}

// NetFactory builds a freshly initialised network.
type NetFactory func(cfg model.Config, seed uint64) (Net, error)
