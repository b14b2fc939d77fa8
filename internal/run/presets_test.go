package run

import "github.com/kestrel-lm/kestrel/internal/model"

// ref7mConfig is the reference model of the step benchmark: vocab 8192,
// d_model 256, 4 layers, 4 heads, SwiGLU 768, seq 256 — 7.6M parameters.
func ref7mConfig() model.Config {
	return model.Config{Vocab: 8192, DModel: 256, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 768,
		SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
}
