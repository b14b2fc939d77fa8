package run

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/monitor"
)

// TestTraceJSONOpsWellFormed trains a tiny model with a trace window
// spanning an evaluation and a checkpoint, then checks trace.json as
// Chrome's trace engine reads it (integer µs, slices nest or abut on the
// thread) and that traced steps carry the model's per-op spans: per layer
// attention and MLP with their GEMMs, lm_head, cross-entropy, the backward
// ops. The run's metrics.sqlite has its evaluations in the metrics view
// and a filled run table.
func TestTraceJSONOpsWellFormed(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(30)
	cfg.Train.EvalEvery, cfg.Checkpoint.Every = 10, 10
	cfg.Monitor.TraceFromStep, cfg.Monitor.TraceSteps = 8, 6 // steps 8..13
	if _, err := runMonitored(t, cfg, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := monitor.CheckTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.ByCat["step"] != 6 || st.Depth < 4 {
		t.Fatalf("trace stats %+v", st)
	}
	// per traced step and layer: 7 forward + 7 backward op spans; 8 outside
	// (the training head of one chunk: model.TestOpTracer)
	if want := 6 * (8 + 14*cfg.Model.NLayers); st.ByCat["op"] != want {
		t.Errorf("%d op spans, want %d", st.ByCat["op"], want)
	}
	// The same run's metrics.sqlite: evaluations are rows of the metrics
	// view (not only JSON in events), and the run table is filled.
	db, err := sql.Open("sqlite", filepath.Join(dir, "metrics.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var evals int
	var val float64
	if err := db.QueryRow("SELECT count(*), min(value) FROM metrics WHERE name = 'val_loss' AND value IS NOT NULL").Scan(&evals, &val); err != nil || evals < 3 || !(val > 0) {
		t.Errorf("val_loss rows in the metrics view: %d (min %v), %v; want one per evaluation (steps 10, 20, 30)", evals, val, err)
	}
	var keys int
	if err := db.QueryRow("SELECT count(*) FROM run WHERE key IN ('name', 'config_hash', 'dataset_hash') AND value != ''").Scan(&keys); err != nil || keys < 2 {
		t.Errorf("run table: %d of name/config_hash/dataset_hash filled, %v", keys, err)
	}
	for _, name := range []string{`"layer1/qkv_gemm"`, `"layer0/mlp"`, `"layer1/down_gemm_backward"`, `"lm_head_gemm"`, `"cross_entropy"`, `"optimizer"`, `"eval"`, `"checkpoint"`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("trace.json lacks %s", name)
		}
	}
}
