package runlog

// OnTrack is the loss-vs-tokens fit's reading of one step (internal/lossfit
// through internal/stepvitals/ontrack.go). NaN fields are left out of
// metrics.jsonl: not known yet, never 0.
type OnTrack struct {
	Fit          float64 // loss_fit: the fitted curve at this step's tokens_seen
	Residual     float64 // scaling_law_residual: median of train_loss_raw − fit over the judged window
	ResidualZ    float64 // scaling_law_residual_z: the residual ÷ its noise
	Projection   float64 // loss_projection_final: the fit at the planned end's tokens
	ProjectionSE float64 // loss_projection_se: its block-jackknife standard error
}

func (o *OnTrack) fields(w fieldVisitor) {
	if o == nil {
		return
	}
	optional(w, "loss_fit", o.Fit)
	optional(w, "scaling_law_residual", o.Residual)
	optional(w, "scaling_law_residual_z", o.ResidualZ)
	optional(w, "loss_projection_final", o.Projection)
	optional(w, "loss_projection_se", o.ProjectionSE)
}

// NoiseScale is the gradient noise scale of one step (McCandlish et al.'s
// B_simple, internal/stepvitals/noise.go), from the micro-batches'
// gradient norms and their sum's, each estimate smoothed by an EMA. NaN
// fields are left out.
type NoiseScale struct {
	GradSq      float64 // grad_true_sq_norm: EMA of the unbiased estimate of |G|²
	NoiseTrace  float64 // grad_noise_trace: EMA of the unbiased estimate of tr(Σ) per sequence
	BSimple     float64 // grad_noise_scale: tr(Σ)/|G|², in sequences (NaN while an EMA is ≤ 0)
	BSimpleToks float64 // grad_noise_scale_tokens: the same in tokens (× tokens per sequence)
}

func (n *NoiseScale) fields(w fieldVisitor) {
	if n == nil {
		return
	}
	optional(w, "grad_true_sq_norm", n.GradSq)
	optional(w, "grad_noise_trace", n.NoiseTrace)
	optional(w, "grad_noise_scale", n.BSimple)
	optional(w, "grad_noise_scale_tokens", n.BSimpleToks)
}
