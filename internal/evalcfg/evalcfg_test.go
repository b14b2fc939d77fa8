package evalcfg

import (
	"strings"
	"testing"
)

// TestConfig: [eval] validation names the field; every must be a
// multiple of train.eval_every unless the only evaluation is the last;
// Due picks the evaluations.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		c         Config
		evalEvery int
		want      string // "" = valid
	}{
		{Config{}, 0, ""},
		{Config{Tasks: []string{"piqa"}, Every: 500}, 250, ""},
		{Config{Tasks: []string{"piqa"}, Every: 500}, 0, ""},
		{Config{Tasks: []string{"piqa"}, Every: 300}, 250, "eval.every = 300"},
		{Config{Tasks: []string{"piqa", "mmlu"}}, 50, "eval.tasks[1]"},
		{Config{Tasks: []string{"bpb", "bpb"}}, 50, "listed twice"},
		{Config{Tasks: []string{"bpb"}, Limit: -1}, 50, "eval.limit"},
		{Config{Heldout: []HeldoutSet{{"legal", "/x/legal.txt"}, {"code.v2", "/x/code.txt"}}, Every: 500}, 250, ""},
		{Config{Heldout: []HeldoutSet{{"legal", "/x/legal.txt"}}, Every: 300}, 250, "eval.every = 300"},
		{Config{Heldout: []HeldoutSet{{"", "/x/legal.txt"}}}, 50, "eval.heldout[0].name: empty"},
		{Config{Heldout: []HeldoutSet{{"le gal", "/x/legal.txt"}}}, 50, `eval.heldout[0].name = "le gal"`},
		{Config{Heldout: []HeldoutSet{{"a/b", "/x/legal.txt"}}}, 50, `eval.heldout[0].name = "a/b"`},
		{Config{Heldout: []HeldoutSet{{"legal", "/x/a.txt"}, {"legal", "/x/b.txt"}}}, 50, `eval.heldout[1].name = "legal": listed twice`},
		{Config{Heldout: []HeldoutSet{{"legal", ""}}}, 50, "eval.heldout[0] (legal).path: empty"},
		{Config{Heldout: []HeldoutSet{{"legal", "/x/a.txt"}}, HeldoutBytes: -1}, 50, "eval.heldout_bytes"},
	} {
		err := tc.c.Validate(tc.evalEvery)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v eval_every=%d: %v, want %q", tc.c, tc.evalEvery, err, tc.want)
		}
	}
	c := Config{Tasks: []string{"piqa"}, Every: 100}
	for _, tc := range []struct {
		s     int
		final bool
		want  bool
	}{{50, false, false}, {100, false, true}, {150, true, true}, {200, false, true}} {
		if got := c.Due(tc.s, tc.final); got != tc.want {
			t.Errorf("Due(%d, %v) = %v", tc.s, tc.final, got)
		}
	}
	if (Config{}).Due(100, true) {
		t.Error("no tasks: Due")
	}
	if !(Config{Tasks: []string{"bpb"}}).Due(7, false) {
		t.Error("every = 0: every evaluation")
	}
	held := Config{Heldout: []HeldoutSet{{"legal", "/x/legal.txt"}}, Every: 100}
	if held.Due(50, false) || !held.Due(100, false) || !held.Due(150, true) {
		t.Error("held-out sets alone: not due at the benchmarks' steps")
	}
	if got := strings.Join(Config{Tasks: []string{"piqa"}, Heldout: held.Heldout}.Names(), ","); got != "piqa,heldout/legal" {
		t.Errorf("Names() = %q", got)
	}
}
