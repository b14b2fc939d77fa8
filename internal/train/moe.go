package train

// updateRouterBias applies the DeepSeek-V3 routing-bias update of an MoE
// model after an applied step (model.moe_balance = bias; a no-op
// otherwise). The bias lives in the parameter buffer, so checkpoints carry
// it and a resume continues bit-exactly.
func updateRouterBias(n Net, skipped bool) {
	if m := Model(n); m != nil && !skipped {
		m.UpdateRouterBias()
	}
}
