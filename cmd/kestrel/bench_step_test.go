package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/stepbench"
)

// TestBenchStepHelpJSONFields: every JSON field `kestrel bench step --help`
// names ("key": in its templates and the --ops bounds) is in the output of
// a 1- then 2-thread run with --ops and passes side by side.
func TestBenchStepHelpJSONFields(t *testing.T) {
	ops := []stepbench.OpTime{{Name: "qkv_gemm", MS: 2, PassMS: 1, Share: 0.5, GFLOP: 0.1, GFLOPS: 100, PctPeak: 0.5},
		{Name: stepbench.OpFold, MS: 2, Share: 0.5}}
	one := stepbench.StepBench{TokensPerSec: 1000, MFU: 0.4, StepSec: 0.004, Threads: 1, Parallel: 2, Batch: 6, Seq: 64, Steps: 5, PeakGFLOPS: 200, Ops: ops}
	two := one
	two.Threads, two.TokensPerSec = 2, 1800
	var buf bytes.Buffer
	if err := show.StepBench(&buf, []stepbench.StepBench{one, two}, "x", true); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		for k := range f {
			have[k] = true
		}
	}
	named := regexp.MustCompile(`"([a-z_]+)"\s*[:,]`).FindAllStringSubmatch(helpText("bench-step"), -1)
	if len(named) < 20 {
		t.Fatalf("the help names %d fields", len(named))
	}
	for _, m := range named {
		if !have[m[1]] && m[1] != "step" && m[1] != "step_op" {
			t.Errorf("bench step --help names %q, the JSON has no such field", m[1])
		}
	}
}
