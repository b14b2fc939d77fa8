package monitor

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTraceNestsJitteredSpans: steps whose measured phases overlap each
// other and the previous step by a fraction of a microsecond up to tens of
// microseconds (as clocks and rounding make them), with model ops nested
// in forward and backward (one running past its phase), come out as a
// well-formed trace: integer microseconds, every slice nested in its
// parent or abutting its sibling.
func TestTraceNestsJitteredSpans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	w, err := NewTraceWriter(path, 1, 50)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	jit := func() time.Duration { return time.Duration(r.IntN(70001)-35000) * time.Nanosecond } // ±35 µs, ns resolution
	at := t0
	for s := int64(1); s <= 50; s++ {
		var ph, ops []Phase
		add := func(name string, start time.Time, d time.Duration) {
			if strings.HasPrefix(name, "layer") || strings.HasPrefix(name, "lm_head") {
				ops = append(ops, Phase{Name: name, Start: start, Dur: d})
				return
			}
			ph = append(ph, Phase{Name: name, Start: start, Dur: d})
		}
		st := at.Add(jit())
		add("data_wait", st, 50*time.Microsecond+jit())
		fw := st.Add(50*time.Microsecond + jit())
		add("forward", fw, 400*time.Microsecond)
		for l := 0; l < 2; l++ {
			ls := fw.Add(time.Duration(10+180*l)*time.Microsecond + jit())
			add("layer"+string(rune('0'+l))+"/attention", ls, 100*time.Microsecond)
			add("layer"+string(rune('0'+l))+"/qkv_gemm", ls.Add(jit()/10), 30*time.Microsecond+jit()/10)
			add("layer"+string(rune('0'+l))+"/o_proj_gemm", ls.Add(60*time.Microsecond), 40*time.Microsecond+jit())
		}
		bw := fw.Add(400*time.Microsecond + jit()/100)
		add("backward", bw, 600*time.Microsecond)
		add("lm_head_backward", bw.Add(time.Microsecond), 620*time.Microsecond) // runs past backward
		add("optimizer", bw.Add(600*time.Microsecond+jit()), 100*time.Microsecond)
		if s%10 == 0 {
			add("eval", st.Add(-300*time.Microsecond), 310*time.Microsecond) // overlaps the previous step
		}
		w.WriteSample(&Sample{Step: s, Time: st.Add(1150 * time.Microsecond), Values: map[string]float64{"step_time": 0.0011503}, Phases: ph, Ops: ops})
		at = st.Add(1100 * time.Microsecond)
	}
	w.WriteAlert(&Alert{Step: 20, Time: t0.Add(time.Millisecond), Severity: SEV2, Rule: RuleStalled})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := CheckTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.ByCat["step"] != 50 || st.ByCat["phase"] != 50*4+5 || st.ByCat["op"] != 50*7 || st.Depth != 4 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCheckTraceRejects: the checker fails on what trace engines drop or
// misread, naming the event.
func TestCheckTraceRejects(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"overlap", `[{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"b","ph":"X","ts":9,"dur":5,"pid":1,"tid":1}]`, `"b" [9, 14) overlaps event 0 "a"`},
		{"child past parent", `[{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"c","ph":"X","ts":2,"dur":3,"pid":1,"tid":1},{"name":"d","ph":"X","ts":4,"dur":7,"pid":1,"tid":1}]`, `"d" [4, 11) overlaps event 1 "c"`},
		{"float ts", `[{"name":"a","ph":"X","ts":0.5,"dur":10,"pid":1,"tid":1}]`, "ts = 0.5 is not an integer"},
		{"no dur", `[{"name":"a","ph":"X","ts":1,"pid":1,"tid":1}]`, "dur missing"},
		{"negative", `[{"name":"a","ph":"X","ts":1,"dur":-1,"pid":1,"tid":1}]`, "negative dur"},
		{"not json", `{`, "not a JSON array"},
	} {
		if _, err := CheckTrace([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	// nesting, abutting and other threads are fine
	ok := `[{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"b","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"c","ph":"X","ts":10,"dur":0,"pid":1,"tid":1},{"name":"d","ph":"X","ts":5,"dur":20,"pid":1,"tid":2},{"name":"m","ph":"M","pid":1}]`
	if st, err := CheckTrace([]byte(ok)); err != nil || st.Slices != 4 || st.Depth != 2 {
		t.Fatalf("%+v %v", st, err)
	}
}
