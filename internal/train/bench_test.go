package train

import (
	"strings"
	"testing"
)

// TestBenchConfig: [eval] validation names the field; every must be a
// multiple of train.eval_every unless the only evaluation is the last;
// Due picks the evaluations.
func TestBenchConfig(t *testing.T) {
	for _, tc := range []struct {
		c         BenchConfig
		evalEvery int
		want      string // "" = valid
	}{
		{BenchConfig{}, 0, ""},
		{BenchConfig{Tasks: []string{"piqa"}, Every: 500}, 250, ""},
		{BenchConfig{Tasks: []string{"piqa"}, Every: 500}, 0, ""},
		{BenchConfig{Tasks: []string{"piqa"}, Every: 300}, 250, "eval.every = 300"},
		{BenchConfig{Tasks: []string{"piqa", "mmlu"}}, 50, "eval.tasks[1]"},
		{BenchConfig{Tasks: []string{"bpb", "bpb"}}, 50, "listed twice"},
		{BenchConfig{Tasks: []string{"bpb"}, Limit: -1}, 50, "eval.limit"},
	} {
		err := tc.c.Validate(tc.evalEvery)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v eval_every=%d: %v, want %q", tc.c, tc.evalEvery, err, tc.want)
		}
	}
	c := BenchConfig{Tasks: []string{"piqa"}, Every: 100}
	for _, tc := range []struct {
		s     int
		final bool
		want  bool
	}{{50, false, false}, {100, false, true}, {150, true, true}, {200, false, true}} {
		if got := c.Due(tc.s, tc.final); got != tc.want {
			t.Errorf("Due(%d, %v) = %v", tc.s, tc.final, got)
		}
	}
	if (BenchConfig{}).Due(100, true) {
		t.Error("no tasks: Due")
	}
	if !(BenchConfig{Tasks: []string{"bpb"}}).Due(7, false) {
		t.Error("every = 0: every evaluation")
	}
}
