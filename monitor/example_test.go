package monitor_test

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/kestrel-lm/kestrel/monitor"
)

// A custom trainer feeds the ICU panel one Sample per step and stops when a
// SEV0 pauses the run.
func Example() {
	cfg := monitor.DefaultConfig()
	cfg.SQLite, cfg.TensorBoard, cfg.TraceSteps = false, false, 0 // no run directory in this example
	m, err := monitor.New(cfg, monitor.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	for step := int64(1); step <= 100; step++ {
		vals := map[string]float64{"train_loss_raw": 3.0, "grad_global_norm": 0.5, "nan_inf_events": 0}
		if step == 100 {
			vals["nan_inf_events"] = 1
		}
		for _, a := range m.Observe(monitor.Sample{Step: step, Values: vals}) {
			fmt.Println(a.Severity, a.Rule, a.Step, a.Action)
		}
		if paused, _ := m.Paused(); paused {
			fmt.Println("stopping at step", step)
			break
		}
	}
	// Output:
	// SEV0 nan_inf 100 pause
	// stopping at step 100
}
