package watchsrc

import (
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/monitor"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// curve is a synthetic healthy run: a decaying loss with noise and norms in
// a stable band.
type curve struct {
	rng *rand.Rand
}

func newCurve(seed uint64) *curve { return &curve{rng: rand.New(rand.NewPCG(seed, 7))} }

func (c *curve) sample(step int64) monitor.Sample {
	loss := 3 + 2*math.Exp(-float64(step)/200) + 0.01*c.rng.NormFloat64()
	return monitor.Sample{Step: step, Tokens: step * 4096, Time: t0.Add(time.Duration(step) * time.Second), Values: map[string]float64{
		"train_loss_raw":        loss,
		"grad_global_norm":      0.5 + 0.02*c.rng.NormFloat64(),
		"update_norm":           0.1 + 0.004*c.rng.NormFloat64(),
		"tokens_per_sec":        10000 + 100*c.rng.NormFloat64(),
		"mfu":                   0.3 + 0.003*c.rng.NormFloat64(),
		"max_attn_logit":        20 + c.rng.NormFloat64(),
		"attn_entropy":          2 + 0.02*c.rng.NormFloat64(),
		"dataloader_stall_frac": 0.01,
		"nan_inf_events":        0,
		"skipped_updates":       0,
		"grad_clipped":          0,
	}}
}

func testConfig() monitor.Config {
	c := monitor.DefaultConfig()
	c.SQLite, c.TensorBoard = false, false
	c.Window = 32
	c.Cooldown = 20
	c.SpikeFollow = 20
	return c
}

func newTestMonitor(t *testing.T, cfg monitor.Config, dir string) *monitor.Monitor {
	t.Helper()
	m, err := monitor.New(cfg, monitor.Options{RunDir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func rulesFired(as []monitor.Alert) map[string]monitor.Alert {
	out := map[string]monitor.Alert{}
	for _, a := range as {
		if _, ok := out[a.Rule]; !ok {
			out[a.Rule] = a
		}
	}
	return out
}
