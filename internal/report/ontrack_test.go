package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

func TestWriteOnTrack(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for s := 1; s <= 200; s++ {
		loss := 1.5 + 2*math.Pow(float64(s), -0.5)
		fmt.Fprintf(&b, `{"step":%d,"tokens_seen":%d,"train_loss_raw":%g,"batch_size":12`, s, 768*s, loss)
		if s >= 20 {
			fmt.Fprintf(&b, `,"loss_fit":%g,"loss_projection_final":%g,"loss_projection_se":%g,"scaling_law_residual":0.001,"grad_noise_scale":%g,"grad_noise_scale_tokens":%g`,
				loss, 1.6+100/float64(s*s), 0.5/float64(s), 40+float64(s)/10, 64*(40+float64(s)/10))
		}
		b.WriteString("}\n")
	}
	p := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	log := runlog.New(p)
	if err := log.Refresh(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	writeOnTrack(&out, log)
	got := out.String()
	for _, want := range []string{"## On track", "| 50 (25%) | 1.64 | 0.01 |", "| 100 (50%) | 1.61 | 0.005 |", "| 200 (100%) | 1.602 | 0.0025 |",
		"critical batch ≈ 3840 tokens", "B_simple = 60 sequences", "batch of 12 sequences", "median of train_loss_raw over the last 50 steps): 1.651", "Last judged residual to the fit (scaling_law_residual, step 200): 0.001."} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}

	// A run without either: no section; without accumulation: said so.
	if err := os.WriteFile(p, []byte(`{"step":1,"tokens_seen":10,"train_loss_raw":3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log = runlog.New(p)
	if err := log.Refresh(); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	writeOnTrack(&out, log)
	if out.Len() != 0 {
		t.Errorf("a run without a fit or noise scale got:\n%s", out.String())
	}
}
