package train

import (
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// fillMoEVitals records the MoE layers' routing vitals (over the step's
// micro-batches) on m: per layer in PerLayer, worst over layers in m.MoE.
// Dense models leave m.MoE nil.
func fillMoEVitals(m *runlog.Step, v *model.Vitals) {
	if len(v.MoE) == 0 {
		return
	}
	if m.PerLayer == nil {
		m.PerLayer = map[string]float64{}
	}
	s := &runlog.MoEStep{UtilEntropy: math.Inf(1), TokensMin: math.Inf(1)}
	for _, x := range v.MoE {
		l := fmt.Sprintf("/layer%d", x.Layer)
		for name, val := range map[string]float64{
			"moe_load_balance_loss": float64(x.LoadBalanceLoss), "moe_util_entropy": float64(x.UtilEntropy),
			"moe_tokens_per_expert_min": float64(x.TokensMin), "moe_tokens_per_expert_max": float64(x.TokensMax),
			"moe_tokens_per_expert_std": float64(x.TokensStd), "moe_dead_experts": float64(x.DeadExperts),
			"moe_drop_rate": float64(x.DropRate),
		} {
			m.PerLayer[name+l] = val
		}
		s.LoadBalanceLoss = math.Max(s.LoadBalanceLoss, float64(x.LoadBalanceLoss))
		s.UtilEntropy = math.Min(s.UtilEntropy, float64(x.UtilEntropy))
		s.TokensMin = math.Min(s.TokensMin, float64(x.TokensMin))
		s.TokensMax = math.Max(s.TokensMax, float64(x.TokensMax))
		s.TokensStd = math.Max(s.TokensStd, float64(x.TokensStd))
		s.DeadExperts += x.DeadExperts
		s.DropRate = math.Max(s.DropRate, float64(x.DropRate))
	}
	m.MoE = s
}

// updateRouterBias applies the DeepSeek-V3 routing-bias update of an MoE
// model after an applied step (model.moe_balance = bias; a no-op
// otherwise). The bias lives in the parameter buffer, so checkpoints carry
// it and a resume continues bit-exactly.
func updateRouterBias(n Net, skipped bool) {
	if m := Model(n); m != nil && !skipped {
		m.UpdateRouterBias()
	}
}
