package train

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/stepvitals"
	"github.com/kestrel-lm/kestrel/monitor"
)

// moeModel is tinyModel with a mixture of experts in every layer.
func moeModel(balance string) model.Config {
	c := tinyModel()
	c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoEExpertHidden = 1, 4, 2, 16
	c.MoESharedExpert, c.MoECapacityFactor, c.MoEBalance, c.MoEBiasRate = true, 1.25, balance, 0.01
	return c
}

// TestMoEResumeBitExact crashes an MoE run with bias balancing and
// gradient accumulation between checkpoints and resumes it: the losses and
// the checkpoint files (whose model holds the routing bias) must equal the
// uninterrupted run's, and the bias must have moved.
func TestMoEResumeBitExact(t *testing.T) {
	mod := func(o *Options) {
		o.Model = moeModel("bias")
		o.Train.MicroBatch = 3
	}
	ref := filepath.Join(t.TempDir(), "ref")
	o := baseOpts(ref)
	mod(&o)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := lossSeq(t, ref)
	for _, m := range readLines(t, ref) {
		for _, k := range []string{"moe_load_balance_loss", "moe_util_entropy", "moe_drop_rate", "moe_dead_experts",
			"moe_tokens_per_expert_std", "moe_drop_rate/layer0"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("step line without %s: %v", k, m)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "run")
	o2 := baseOpts(dir)
	mod(&o2)
	o2.Observers = []Observer{stopAt{step: 10}}
	if _, err := Run(context.Background(), o2); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want crash, got %v", err)
	}
	o3 := baseOpts(dir)
	mod(&o3)
	if _, err := Run(context.Background(), o3); err != nil {
		t.Fatal(err)
	}
	if got := lossSeq(t, dir); !slices.Equal(got, want) {
		t.Errorf("losses differ after resume:\n got %v\nwant %v", got, want)
	}
	a, b := filepath.Join(ref, "checkpoints", checkpoint.Name(12)), filepath.Join(dir, "checkpoints", checkpoint.Name(12))
	for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile} {
		if fileSum(t, a, f) != fileSum(t, b, f) {
			t.Errorf("%s differs between the uninterrupted and the resumed run", f)
		}
	}
	m, _, err := LoadModel(a, false, o.Logger)
	if err != nil {
		t.Fatal(err)
	}
	tn, ok := m.Tensor("model.layers.0.mlp.gate.e_score_correction_bias")
	if !ok {
		t.Fatal("no routing bias in the checkpoint's model")
	}
	if slices.Equal(m.Params[tn.Offset:tn.Offset+tn.Size], make([]float32, tn.Size)) {
		t.Error("the routing bias did not move in 12 steps")
	}
}

// TestMoEAlertsOnForcedImbalance drives the monitor with the MoE vitals of
// real passes: with the routing bias pushed to expert 0 (every token picks
// it, the others starve, capacity overflows) both SEV1 MoE rules fire
// after monitor.moe_sustain_steps; the same model without the push stays
// quiet.
func TestMoEAlertsOnForcedImbalance(t *testing.T) {
	for _, forced := range []bool{false, true} {
		cfg := moeModel("bias")
		cfg.MoETopK, cfg.MoECapacityFactor, cfg.MoESharedExpert = 1, 1.5, false
		m, err := model.New(cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		if forced {
			tn, _ := m.Tensor("model.layers.0.mlp.gate.e_score_correction_bias")
			m.Params[tn.Offset] = 10
		}
		mc := monitor.DefaultConfig()
		mc.SQLite, mc.TensorBoard = false, false
		mon, err := monitor.New(mc, monitor.Options{RunDir: t.TempDir(), Logger: baseOpts("").Logger})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		const B, T = 4, 32
		b := &model.Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T)}
		fired := map[string]int64{}
		var last *runlog.Step
		for s := 1; s <= 40; s++ {
			for i := range b.Inputs {
				b.Inputs[i], b.Targets[i] = int32(r.IntN(cfg.Vocab)), int32(r.IntN(cfg.Vocab))
			}
			m.ZeroGrads()
			st, err := m.ForwardBackward(b, 1)
			if err != nil {
				t.Fatal(err)
			}
			step := &runlog.Step{Step: s, TokensSeen: int64(s * B * T), TrainLossRaw: st.Loss, LearningRate: 1e-3}
			stepvitals.FillModel(step, m.Vitals())
			last = step
			for _, a := range mon.Observe(monitor.Sample{Step: int64(s), Tokens: step.TokensSeen, Values: runlog.Values(step, nil)}) {
				if strings.HasPrefix(a.Rule, "moe_") {
					if a.Severity != monitor.SEV1 {
						t.Errorf("%s is %s, want SEV1", a.Rule, a.Severity)
					}
					if _, ok := fired[a.Rule]; !ok {
						fired[a.Rule] = int64(s)
					}
				}
			}
		}
		mon.Close()
		js, _ := json.Marshal(last.MoE)
		t.Logf("forced=%v: last step's MoE vitals %s; MoE alerts %v", forced, js, fired)
		if !forced {
			if len(fired) > 0 {
				t.Errorf("balanced run fired %v", fired)
			}
			if last.MoE.DropRate != 0 || last.MoE.DeadExperts != 0 || last.MoE.UtilEntropy < 0.9 {
				t.Errorf("balanced run vitals %s", js)
			}
			continue
		}
		for _, rule := range []string{monitor.RuleMoEDrop, monitor.RuleMoEDeadExpert} {
			at, ok := fired[rule]
			if !ok {
				t.Errorf("forced imbalance: %s did not fire", rule)
			} else if at != int64(mc.MoESustainSteps) {
				t.Errorf("%s fired at step %d, want %d (moe_sustain_steps)", rule, at, mc.MoESustainSteps)
			}
		}
		// (moe_load_balance_loss stays near 1 here: the bias moves the
		// selections, not the router probabilities Pᵢ)
		if last.MoE.DeadExperts != 3 || last.MoE.UtilEntropy != 0 || last.MoE.TokensMax != B*T || last.MoE.DropRate < 0.5 {
			t.Errorf("forced run vitals %s", js)
		}
	}
}
