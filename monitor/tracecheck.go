package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// TraceStats summarises a checked trace.json.
type TraceStats struct {
	Slices int            // complete ("X") events
	ByCat  map[string]int // slices per category (step, phase, op)
	Depth  int            // deepest nesting (1 = top-level slices only)
}

// CheckTrace checks a Chrome trace-event JSON array the way Chrome's and
// Perfetto's trace engines need complete ("X") events on one thread:
// integer microsecond ts and dur, dur ≥ 0, and per (pid, tid) the slices
// form a tree — each lies inside the one it starts in, or starts at or
// after that one's end. The error names the first offending event.
func CheckTrace(data []byte) (TraceStats, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var evs []map[string]any
	if err := dec.Decode(&evs); err != nil {
		return TraceStats{}, fmt.Errorf("trace: not a JSON array of events: %w", err)
	}
	type ev struct {
		i        int
		name     string
		ts, end  int64
		pid, tid string
	}
	integer := func(e map[string]any, k string, i int) (int64, error) {
		n, ok := e[k].(json.Number)
		if !ok {
			return 0, fmt.Errorf("trace: event %d (%v): %s missing or not a number", i, e["name"], k)
		}
		v, err := n.Int64()
		if err != nil {
			return 0, fmt.Errorf("trace: event %d (%v): %s = %s is not an integer number of microseconds", i, e["name"], k, n)
		}
		return v, nil
	}
	st := TraceStats{ByCat: map[string]int{}}
	threads := map[string][]ev{}
	for i, e := range evs {
		if e["ph"] != "X" {
			continue
		}
		ts, err := integer(e, "ts", i)
		if err != nil {
			return st, err
		}
		dur, err := integer(e, "dur", i)
		if err != nil {
			return st, err
		}
		if dur < 0 {
			return st, fmt.Errorf("trace: event %d (%v): negative dur %d", i, e["name"], dur)
		}
		name, _ := e["name"].(string)
		cat, _ := e["cat"].(string)
		x := ev{i: i, name: name, ts: ts, end: ts + dur, pid: fmt.Sprint(e["pid"]), tid: fmt.Sprint(e["tid"])}
		threads[x.pid+"/"+x.tid] = append(threads[x.pid+"/"+x.tid], x)
		st.Slices++
		st.ByCat[cat]++
	}
	for _, list := range threads {
		sort.SliceStable(list, func(a, b int) bool {
			if list[a].ts != list[b].ts {
				return list[a].ts < list[b].ts
			}
			return list[a].end > list[b].end
		})
		var stack []ev
		for _, x := range list {
			for len(stack) > 0 && x.ts >= stack[len(stack)-1].end {
				stack = stack[:len(stack)-1]
			}
			if n := len(stack); n > 0 && x.end > stack[n-1].end {
				p := stack[n-1]
				return st, fmt.Errorf("trace: event %d %q [%d, %d) overlaps event %d %q [%d, %d) on thread %s/%s: neither nests nor abuts", x.i, x.name, x.ts, x.end, p.i, p.name, p.ts, p.end, x.pid, x.tid)
			}
			stack = append(stack, x)
			st.Depth = max(st.Depth, len(stack))
		}
	}
	return st, nil
}
