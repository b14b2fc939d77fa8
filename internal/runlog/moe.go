package runlog

// MoEStep holds a step's mixture-of-experts routing vitals, worst over the
// MoE layers (per layer in Step.PerLayer as moe_drop_rate/layerL etc.).
// Loads count the top-k selections of the step's global batch.
type MoEStep struct {
	LoadBalanceLoss float64 // max over layers of E·Σᵢ fᵢ·Pᵢ (1 = balanced, E = one expert takes all)
	UtilEntropy     float64 // min over layers of the entropy of expert loads ÷ ln E (1 = uniform)
	TokensMin       float64 // min over layers of the fewest selections of an expert
	TokensMax       float64 // max over layers of the most selections of an expert
	TokensStd       float64 // max over layers of the std of selections per expert
	DeadExperts     int     // experts no token selected, summed over layers
	DropRate        float64 // max over layers of dropped / all assignments (capacity overflow)
}

func (m *MoEStep) fields(w fieldVisitor) {
	w.float("moe_load_balance_loss", m.LoadBalanceLoss)
	w.float("moe_util_entropy", m.UtilEntropy)
	w.float("moe_tokens_per_expert_min", m.TokensMin)
	w.float("moe_tokens_per_expert_max", m.TokensMax)
	w.float("moe_tokens_per_expert_std", m.TokensStd)
	w.int("moe_dead_experts", int64(m.DeadExperts))
	w.float("moe_drop_rate", m.DropRate)
}
