package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

func TestWriteMemory(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lines    string
		estimate int64
		want     []string // "" entries: the section is absent
	}{
		{"peak beside the estimate", `{"step":1,"train_loss_raw":3,"rss_bytes":104857600,"go_heap_bytes":52428800,"step_time_p50":0.1,"step_time_p95":0.2}
{"step":2,"train_loss_raw":3,"rss_bytes":209715200,"go_heap_bytes":41943040,"step_time_p50":0.1,"step_time_p95":0.3}
{"step":3,"train_loss_raw":3,"rss_bytes":157286400,"go_heap_bytes":41943040,"step_time_p50":0.12,"step_time_p95":0.3}
`, 400 << 20, []string{"## Memory and step time", "| peak RSS (rss_bytes) | 200 MiB at step 2 |", "| peak Go heap (go_heap_bytes) | 50 MiB |", "| preflight estimate (memory_estimate_bytes) | 400 MiB |", "| measured peak ÷ estimate | 0.50 |", "0.12 s / 0.3 s"}},
		{"no estimate in the manifest", `{"step":1,"train_loss_raw":3,"rss_bytes":104857600}
`, 0, []string{"| peak RSS (rss_bytes) | 100 MiB at step 1 |"}},
		{"nothing measured", `{"step":1,"train_loss_raw":3}
`, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(tc.lines), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.estimate > 0 {
				if err := runlog.WriteManifest(dir, &runlog.Manifest{MemoryEstimate: tc.estimate}); err != nil {
					t.Fatal(err)
				}
			}
			log, err := runlog.Load(filepath.Join(dir, "metrics.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			writeMemory(&b, log, dir)
			got := b.String()
			if tc.want == nil && got != "" {
				t.Fatalf("section for a run that measured nothing:\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			if tc.estimate == 0 && strings.Contains(got, "estimate") {
				t.Errorf("estimate row without an estimate:\n%s", got)
			}
		})
	}
}
