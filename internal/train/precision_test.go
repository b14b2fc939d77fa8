package train

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// TestBF16RunThroughMonitor: a bf16 run (on the reference kernel, whatever
// the CPU) trains like the fp32 run of the same config — every step's loss
// up to the injected faults within 2% of it, and different from it (the
// products did round) — and the monitor judges it unchanged: a random
// batch at step 12 and a 300× LR spike at step 16 fire the same alerts
// (batch_anomaly, divergence) at the same steps in both. Its manifest records the
// precision, the bf16 kernel and the peak mfu divides by.
func TestBF16RunThroughMonitor(t *testing.T) {
	t.Setenv(ops.BF16ReferenceEnv, "1")
	type run struct {
		losses []float64
		raw    []string
		alerts []string
		man    map[string]any
	}
	do := func(prec string) run {
		dir := filepath.Join(t.TempDir(), prec)
		o := baseOpts(dir)
		o.Train.Steps, o.Train.Precision, o.Checkpoint.Every = 24, prec, 0
		o.Optim.SkipBadSteps = false
		o.Debug.LRSpikeAtStep, o.Debug.LRSpikeFactor, o.Debug.LRSpikeSteps = 16, 300, 3
		o.Debug.CorruptBatchAtStep = 12
		o.Optim.MaxGradNorm = 0
		ob := newMonitorObserver(t, nil)
		o.Observers = []Observer{ob}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatalf("%s: %v", prec, err)
		}
		var r run
		r.raw = lossSeq(t, dir)
		for _, l := range r.raw {
			var v float64
			if err := json.Unmarshal([]byte(l[strings.IndexByte(l, ':')+1:]), &v); err != nil {
				t.Fatalf("loss %q: %v", l, err)
			}
			r.losses = append(r.losses, v)
		}
		for _, a := range ob.alerts {
			r.alerts = append(r.alerts, a.Rule+"@"+itoa(a.Step))
		}
		raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil || json.Unmarshal(raw, &r.man) != nil {
			t.Fatalf("%s manifest: %v", prec, err)
		}
		return r
	}
	f32, b16 := do("fp32"), do("bf16")
	t.Logf("fp32 alerts %v\nbf16 alerts %v", f32.alerts, b16.alerts)
	if len(f32.alerts) == 0 {
		t.Fatal("the LR spike fired no alert in fp32: the comparison would be empty")
	}
	if !slices.Equal(f32.alerts, b16.alerts) {
		t.Errorf("alerts differ:\nfp32 %v\nbf16 %v", f32.alerts, b16.alerts)
	}
	if len(b16.losses) != 24 || len(f32.losses) != 24 {
		t.Fatalf("%d / %d step lines", len(b16.losses), len(f32.losses))
	}
	if slices.Equal(b16.raw, f32.raw) {
		t.Error("bf16 losses equal the fp32 ones: train.precision had no effect")
	}
	for i := range 15 { // up to the spike; after it the trajectories are chaotic
		if d := math.Abs(b16.losses[i]-f32.losses[i]) / f32.losses[i]; d > 0.02 {
			t.Errorf("step %d: bf16 loss %g vs fp32 %g", i+1, b16.losses[i], f32.losses[i])
		}
	}
	if b16.man["precision"] != "bf16" || b16.man["bf16_impl"] != kernels.BF16Impl() || !strings.HasPrefix(b16.man["peak_dtype"].(string), "bf16") {
		t.Errorf("bf16 manifest: precision %v bf16_impl %v peak_dtype %v", b16.man["precision"], b16.man["bf16_impl"], b16.man["peak_dtype"])
	}
	if f32.man["precision"] != "fp32" || f32.man["bf16_impl"] != nil || f32.man["peak_dtype"] != "fp32 fma" {
		t.Errorf("fp32 manifest: precision %v bf16_impl %v peak_dtype %v", f32.man["precision"], f32.man["bf16_impl"], f32.man["peak_dtype"])
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestBF16NaNStops: a NaN in a bf16 run stops it as in fp32 (nan_inf_events
// is the one count of non-finite values; monitor/registry.go says why).
func TestBF16NaNStops(t *testing.T) {
	t.Setenv(ops.BF16ReferenceEnv, "1")
	o := baseOpts(filepath.Join(t.TempDir(), "run"))
	o.Train.Precision, o.Debug.NaNAtStep = "bf16", 6
	var ne *NaNError
	if _, err := Run(context.Background(), o); !errors.As(err, &ne) || ne.Step != 6 {
		t.Fatalf("want NaNError at step 6, got %v", err)
	}
}

// plainNet is a Net without SetPrecision.
type plainNet struct{ Net }

// TestPrecisionRefused: an unknown precision fails the config check naming
// the field, and a network that cannot run bf16 is refused, naming it.
func TestPrecisionRefused(t *testing.T) {
	t.Setenv(ops.BF16ReferenceEnv, "1")
	c := DefaultConfig()
	c.Precision = "fp16"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "train.precision") {
		t.Errorf("precision fp16: %v", err)
	}
	n, err := NewModelNet(tinyModel(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := setPrecision(n, "bf16"); err != nil || p != ops.BF16 || Model(n).Precision() != ops.BF16 {
		t.Errorf("model net bf16: %v %v", p, err)
	}
	if _, err := setPrecision(plainNet{n}, "bf16"); err == nil || !strings.Contains(err.Error(), "plainNet") {
		t.Errorf("plain net bf16: %v", err)
	}
	if p, err := setPrecision(plainNet{n}, "fp32"); err != nil || p != ops.FP32 {
		t.Errorf("plain net fp32: %v %v", p, err)
	}
}
