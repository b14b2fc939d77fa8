package runlog

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestScanLine(t *testing.T) {
	tests := []struct {
		line string
		nums map[string]float64
		strs map[string]string
		err  string
	}{
		{line: `{"step":3,"loss":1.5e-2,"ok":true,"no":false,"x":null}`, nums: map[string]float64{"step": 3, "loss": 0.015, "ok": 1, "no": 0}},
		{line: ` { "a" : { "b" : [1, 2, {"c": -3}] } , "s": "hi\"\/there" } `, nums: map[string]float64{"a/b/0": 1, "a/b/1": 2, "a/b/2/c": -3}, strs: map[string]string{"s": `hi"/there`}},
		{line: `{"v":NaN,"w":"Infinity","z":-Infinity}`, nums: map[string]float64{"v": math.NaN(), "w": math.Inf(1), "z": math.Inf(-1)}},
		{line: `{"a":Infinity,"b":"Inf","c":"+Inf","d":"-Inf","e":"nan","f":"-inf","g":"NaN"}`, nums: map[string]float64{"a": math.Inf(1), "b": math.Inf(1), "c": math.Inf(1), "d": math.Inf(-1), "e": math.NaN(), "f": math.Inf(-1), "g": math.NaN()}},
		{line: `{"unicode":"\u00e9t\u00e9"}`, strs: map[string]string{"unicode": "été"}},
		{line: `{}`},
		{line: `{"a":1`, err: "unterminated"},
		{line: `{"a":1}x`, err: "trailing"},
		{line: `[1]`, err: "expected '{'"},
		{line: `{"a":tru}`, err: "bad literal"},
		{line: `{"a":"x}`, err: "unterminated string"},
	}
	for _, tc := range tests {
		rec := NewRecord()
		err := ParseLine([]byte(strings.TrimSpace(tc.line)), rec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		nums := 0
		for _, e := range rec.kvs {
			if !e.isS {
				nums++
			}
		}
		if nums != len(tc.nums) {
			t.Errorf("%s: kvs %v, want nums %v", tc.line, rec.kvs, tc.nums)
		}
		for k, v := range tc.nums {
			got, ok := rec.Num(k)
			if !ok || !(got == v || (math.IsNaN(got) && math.IsNaN(v))) {
				t.Errorf("%s: %s = %v, want %v", tc.line, k, got, v)
			}
		}
		for k, v := range tc.strs {
			if got, _ := rec.Str(k); got != v {
				t.Errorf("%s: %s = %q, want %q", tc.line, k, got, v)
			}
		}
	}
}

func TestEachStr(t *testing.T) {
	rec := NewRecord()
	if err := ParseLine([]byte(`{"ids":["a",7,"c"],"phase":"warmup","x":1,"n":{"s":"deep"}}`), rec); err != nil {
		t.Fatal(err)
	}
	var got []string
	rec.EachStr(func(name, s string) { got = append(got, name+"="+s) })
	if want := "[ids/0=a ids/2=c phase=warmup n/s=deep]"; fmt.Sprint(got) != want {
		t.Errorf("EachStr %v, want %s", got, want)
	}
	if v, ok := rec.Num("ids/1"); !ok || v != 7 {
		t.Errorf("ids/1 = %v %v", v, ok)
	}
}
