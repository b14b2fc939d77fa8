package batchsched

import (
	"math"
	"strings"
	"testing"
)

func TestSchedule(t *testing.T) {
	s := Schedule{{0, 4}, {10, 8}, {15, 2}}
	cases := []struct {
		step, batch int
		first       int64
	}{{0, 4, 0}, {1, 4, 4}, {10, 8, 40}, {11, 8, 48}, {15, 2, 80}, {20, 2, 90}}
	for _, c := range cases {
		if s.At(c.step) != c.batch || s.FirstSeq(c.step) != c.first {
			t.Errorf("step %d: batch %d first %d, want %d %d", c.step, s.At(c.step), s.FirstSeq(c.step), c.batch, c.first)
		}
	}
	for g := int64(0); g < 100; g++ {
		st := s.StepOf(g)
		if s.FirstSeq(st) > g || g >= s.FirstSeq(st)+int64(s.At(st)) {
			t.Fatalf("StepOf(%d) = %d", g, st)
		}
	}
	if s.Max() != 8 || s.LRScale(10) != math.Sqrt2 || s.LRScale(0) != 1 {
		t.Errorf("Max %d, LRScale(10) %g", s.Max(), s.LRScale(10))
	}
	for _, bad := range []Schedule{nil, {{1, 4}}, {{0, 0}}, {{0, 4}, {0, 5}}} {
		if bad.Validate() == nil {
			t.Errorf("%v: want error", bad)
		}
	}
}

// TestFromConfig: config entries count metrics steps from 1; [S, B] is in
// force from step index S-1, i.e. from metrics step S.
func TestFromConfig(t *testing.T) {
	s, err := FromConfig("train.batch_schedule", [][]int{{1, 8}, {11, 32}}, 12)
	if err != nil {
		t.Fatal(err)
	}
	if s.Validate() != nil || s.At(9) != 8 || s.At(10) != 32 || s.At(1000) != 32 || s.LRScale(10) != 2 || s.LRScale(0) != 1 {
		t.Errorf("schedule %v: %d %d %g", s, s.At(9), s.At(10), s.LRScale(10))
	}
	c, err := FromConfig("train.batch_schedule", nil, 12)
	if err != nil || c.At(5) != 12 || len(c) != 1 {
		t.Errorf("constant: %v %v", c, err)
	}
	for _, tc := range []struct {
		pairs [][]int
		want  string
	}{
		{[][]int{{0, 8}}, "train.batch_schedule[0]: start step 0"},
		{[][]int{{1, 8}, {-3, 9}}, "train.batch_schedule[1]: start step -3"},
		{[][]int{{2, 8}}, "train.batch_schedule[0]: the first entry must start at step 1"},
		{[][]int{{1, 8}, {5, 9}, {5, 10}}, "train.batch_schedule[2]: start steps must increase, got 5 after 5"},
		{[][]int{{1, 8}, {1, 9}}, "train.batch_schedule[1]: start steps must increase"},
		{[][]int{{1, 0}}, "train.batch_schedule[0]: global batch must be > 0"},
		{[][]int{{1}}, "train.batch_schedule[0]: want [start_step, global_batch]"},
		{nil, "train.batch_schedule is empty and the batch size is 0"},
	} {
		if _, err := FromConfig("train.batch_schedule", tc.pairs, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.pairs, err, tc.want)
		}
	}
}
