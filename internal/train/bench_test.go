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
		{BenchConfig{Heldout: []HeldoutSet{{"legal", "/x/legal.txt"}, {"code.v2", "/x/code.txt"}}, Every: 500}, 250, ""},
		{BenchConfig{Heldout: []HeldoutSet{{"legal", "/x/legal.txt"}}, Every: 300}, 250, "eval.every = 300"},
		{BenchConfig{Heldout: []HeldoutSet{{"", "/x/legal.txt"}}}, 50, "eval.heldout[0].name: empty"},
		{BenchConfig{Heldout: []HeldoutSet{{"le gal", "/x/legal.txt"}}}, 50, `eval.heldout[0].name = "le gal"`},
		{BenchConfig{Heldout: []HeldoutSet{{"a/b", "/x/legal.txt"}}}, 50, `eval.heldout[0].name = "a/b"`},
		{BenchConfig{Heldout: []HeldoutSet{{"legal", "/x/a.txt"}, {"legal", "/x/b.txt"}}}, 50, `eval.heldout[1].name = "legal": listed twice`},
		{BenchConfig{Heldout: []HeldoutSet{{"legal", ""}}}, 50, "eval.heldout[0] (legal).path: empty"},
		{BenchConfig{Heldout: []HeldoutSet{{"legal", "/x/a.txt"}}, HeldoutBytes: -1}, 50, "eval.heldout_bytes"},
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
	held := BenchConfig{Heldout: []HeldoutSet{{"legal", "/x/legal.txt"}}, Every: 100}
	if held.Due(50, false) || !held.Due(100, false) || !held.Due(150, true) {
		t.Error("held-out sets alone: not due at the benchmarks' steps")
	}
	if got := strings.Join(BenchConfig{Tasks: []string{"piqa"}, Heldout: held.Heldout}.Names(), ","); got != "piqa,heldout/legal" {
		t.Errorf("Names() = %q", got)
	}
}
