package dashboard

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// writeRun writes a synthetic run directory with rows metric lines of
// about nMetrics metrics each (train loss with a planted spike at spikeStep,
// norms, LR, throughput, per-layer vitals), an eval line every 50 steps and
// an alerts.jsonl. It returns the directory.
func writeRun(t testing.TB, dir string, rows, nMetrics, spikeStep int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	layers := max(0, (nMetrics-10)/4)
	for s := 1; s <= rows; s++ {
		loss := 4*math.Pow(float64(s), -0.2) + 0.05*rng.NormFloat64()
		if s == spikeStep {
			loss += 5
		}
		phase := "warmup"
		if s > 100 {
			phase = "stable"
		}
		fmt.Fprintf(w, `{"step":%d,"tokens_seen":%d,"wall_time":%.3f,"train_loss_raw":%.6f,"train_loss_ema":%.6f,"learning_rate":%.6g,"lr_phase":%q,"grad_global_norm":%.5f,"update_norm":%.5f,"update_to_weight":%.6g,"tokens_per_sec":%.1f,"step_time":%.5f,"mfu":%.4f,"skipped":%t,"clipped":%t`,
			s, s*2048, 1000+0.2*float64(s), loss, loss, 1e-3*math.Min(1, float64(s)/100), phase,
			1+0.1*rng.Float64(), 0.5+0.05*rng.Float64(), 1e-3, 10000+100*rng.Float64(), 0.2, 0.3, s == spikeStep, s%97 == 0)
		fmt.Fprintf(w, `,"max_attn_logit":%.4f,"attn_entropy":%.4f`, 10+rng.Float64(), 2+rng.Float64())
		for l := 0; l < layers; l++ {
			fmt.Fprintf(w, `,"max_attn_logit/layer%d/head0":%.4f,"max_attn_logit/layer%d/head1":%.4f,"attn_entropy/layer%d/head0":%.4f,"residual_rms/layer%d":%.4f`,
				l, 10+rng.Float64(), l, 9+rng.Float64(), l, 2+rng.Float64(), l, 1+rng.Float64())
		}
		w.WriteString("}\n")
		if s%50 == 0 {
			fmt.Fprintf(w, `{"step":%d,"tokens_seen":%d,"wall_time":%.3f,"val_loss":%.5f,"val_loss_ema":%.5f}`+"\n", s, s*2048, 1000+0.2*float64(s), loss+0.1, loss+0.05)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	alerts := fmt.Sprintf(`{"step":%d,"severity":"SEV1","rule":"loss_spike","message":"loss z=9.1","runbook":"Check the batch at this step.","verdict":"recoverable"}`+"\n", spikeStep)
	if err := os.WriteFile(filepath.Join(dir, "alerts.jsonl"), []byte(alerts), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[optim]\nmax_grad_norm = 1.0\nlr = 0.001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
