package monitor

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// benchSample is a ref7m-like step line: ~45 scalars plus per-layer/head
// vitals (6 layers × 6 heads × 2 + 6 × 3 per layer).
func benchSample(step int64, c *curve) Sample {
	s := c.sample(step)
	for _, k := range []string{"learning_rate", "lr_phase", "tokens_per_update", "update_to_weight", "param_norm", "residual_rms",
		"activation_outlier_rate", "step_time", "data_wait_time", "forward_backward_time", "optimizer_time", "z_loss", "logit_lse_mean",
		"update_norm_post_clip", "update_clip_threshold", "clipped_updates", "batch_size", "tokens_seen",
		"train_loss_ema", "grad_clip_rate", "checkpoint_time", "eval_time", "pad_fraction", "loss_scale", "overflow_rate", "steps_seen"} {
		s.Values[k] = 0.5
	}
	s.Values["clipped"], s.Values["skipped"] = 0, 0
	for l := 0; l < 6; l++ {
		for h := 0; h < 6; h++ {
			s.Values[fmt.Sprintf("max_attn_logit/layer%d/head%d", l, h)] = 10
			s.Values[fmt.Sprintf("attn_entropy/layer%d/head%d", l, h)] = 2
		}
		s.Values[fmt.Sprintf("residual_rms/layer%d", l)] = 1
		s.Values[fmt.Sprintf("update_to_weight/layer%d", l)] = 1e-3
		s.Values[fmt.Sprintf("activation_outlier_rate/layer%d", l)] = 1e-4
	}
	return s
}

// BenchmarkObserve is the per-step cost of the whole monitor with the
// SQLite store and TensorBoard sinks on; the store's background commits
// are included (Close waits for them).
func BenchmarkObserve(b *testing.B) {
	for _, sinks := range []string{"none", "sqlite+tfevents"} {
		b.Run(sinks, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.SQLite, cfg.TensorBoard = sinks != "none", sinks != "none"
			m, err := New(cfg, Options{RunDir: b.TempDir(), Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			c := newCurve(1)
			samples := make([]Sample, 256)
			for i := range samples {
				samples[i] = benchSample(int64(i+1), c)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := samples[i%len(samples)]
				s.Step = int64(i + 1)
				m.Observe(s)
			}
			if err := m.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(samples[0].Values)), "values/step")
		})
	}
}

// BenchmarkStoreCommit is the SQLite store alone, commit included.
func BenchmarkStoreCommit(b *testing.B) {
	s, err := OpenStore(filepath.Join(b.TempDir(), "m.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	smp := benchSample(1, newCurve(1))
	smp.Time = time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		smp.Step = int64(i)
		s.WriteSample(&smp)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkObserveOptimNorms is BenchmarkObserve (no sinks) with and without
// the per-layer optimizer norms of a 6-layer model (update_norm, param_norm,
// adam_m_norm, adam_v_norm for embed, layer0..5 and lm_head, and the global
// Adam norms): what they add to the monitor's per-step cost, the spike
// classifier's per-layer windows included.
func BenchmarkObserveOptimNorms(b *testing.B) {
	for _, with := range []bool{false, true} {
		b.Run(fmt.Sprintf("optim_norms=%v", with), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.SQLite, cfg.TensorBoard = false, false
			m, err := New(cfg, Options{RunDir: b.TempDir(), Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			c := newCurve(1)
			samples := make([]Sample, 256)
			for i := range samples {
				samples[i] = benchSample(int64(i+1), c)
				if with {
					v := samples[i].Values
					v["adam_m_norm"], v["adam_v_norm"] = 0.3, 0.01
					for _, g := range []string{"embed", "layer0", "layer1", "layer2", "layer3", "layer4", "layer5", "lm_head"} {
						for _, base := range []string{"update_norm", "param_norm", "adam_m_norm", "adam_v_norm"} {
							v[base+"/"+g] = 0.1 + 0.001*float64(i%7)
						}
					}
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := samples[i%len(samples)]
				s.Step = int64(i + 1)
				m.Observe(s)
			}
			if err := m.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
