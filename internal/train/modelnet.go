package train

import (
	"log/slog"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// modelNet adapts *model.Model to Net.
type modelNet struct{ m *model.Model }

// NewModelNet builds and initialises a model.Model from cfg and seed.
func NewModelNet(cfg model.Config, seed uint64) (Net, error) {
	m, err := model.New(cfg, seed)
	if err != nil {
		return nil, err
	}
	return modelNet{m}, nil
}

// Model returns the underlying model of a Net made by NewModelNet (nil otherwise).
func Model(n Net) *model.Model {
	if mn, ok := n.(modelNet); ok {
		return mn.m
	}
	return nil
}

func (n modelNet) Params() []float32       { return n.m.Params }
func (n modelNet) Grads() []float32        { return n.m.Grads }
func (n modelNet) Tensors() []model.Tensor { return n.m.Tensors() }
func (n modelNet) ZeroGrads()              { n.m.ZeroGrads() }
func (n modelNet) StartAccumulation()      { n.m.StartAccumulation() }
func (n modelNet) ForwardBackward(b *model.Batch, scale float32) (model.Stats, error) {
	return n.m.ForwardBackward(b, scale)
}
func (n modelNet) Forward(b *model.Batch) (model.Stats, error) { return n.m.Forward(b) }
func (n modelNet) Outputs() ([]float32, []float32)             { return n.m.Outputs() }
func (n modelNet) Vitals() *model.Vitals                       { return n.m.Vitals() }
func (n modelNet) FLOPsPerToken() float64                      { return n.m.FLOPsPerToken() }

// LogProbs is the forward-only path validation uses (evalfwd.go).
func (n modelNet) LogProbs(b *model.Batch, dst []float32) error { return n.m.LogProbs(b, dst) }

// LoadModel builds the model of the newest valid checkpoint of a run
// directory (or of a checkpoint directory) and loads its weights, or its
// EMA weights when ema is set (checkpoint.LoadModel).
func LoadModel(path string, ema bool, log *slog.Logger) (*model.Model, *checkpoint.Loaded, error) {
	return checkpoint.LoadModel(path, ema, log)
}
