package watchsrc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// writeForeignJSONL writes a run from "another trainer" (its own field
// names, Python's NaN literal) with a planted spike and a planted NaN.
func writeForeignJSONL(t *testing.T, path string, from, to int64, c *curve) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := from; s <= to; s++ {
		smp := c.sample(s)
		loss := fmt.Sprintf("%.6f", smp.Values["train_loss_raw"])
		if s == 200 {
			loss = fmt.Sprintf("%.6f", smp.Values["train_loss_raw"]+1.5)
		}
		if s == 300 {
			loss = "NaN"
		}
		fmt.Fprintf(f, `{"iter": %d, "loss": %s, "optim": {"grad_norm": %.5f}, "tok_s": %.1f, "sources": ["web", "code"]}`+"\n",
			s, loss, smp.Values["grad_global_norm"], smp.Values["tokens_per_sec"])
	}
}

var foreignMap = map[string]string{"step": "iter", "train_loss_raw": "loss", "grad_global_norm": "optim/grad_norm", "tokens_per_sec": "tok_s"}

func TestWatchForeignJSONL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	writeForeignJSONL(t, path, 1, 320, newCurve(8))
	if f, err := DetectFormat(path); err != nil || f != FormatJSONL {
		t.Fatalf("format %q %v", f, err)
	}
	m := newTestMonitor(t, testConfig(), "")
	var got []monitor.Alert
	_, err := Watch(context.Background(), path, Options{Map: foreignMap}, m, func(a monitor.Alert) { got = append(got, a) })
	if err != nil {
		t.Fatal(err)
	}
	f := rulesFired(got)
	if a, ok := f[monitor.RuleLossSpike]; !ok || a.Step != 200 || !strings.Contains(a.Message, "web") {
		t.Errorf("spike: %+v", f[monitor.RuleLossSpike])
	}
	if a, ok := f[monitor.RuleNaNInf]; !ok || a.Step != 300 || a.Severity != monitor.SEV0 {
		t.Errorf("nan: %+v", f[monitor.RuleNaNInf])
	}
	if a, ok := f[monitor.RuleSpikeVerdict]; !ok || a.Verdict != monitor.VerdictRecoverable {
		t.Errorf("verdict: %+v", f[monitor.RuleSpikeVerdict])
	}
}

func TestWatchFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	c := newCurve(8)
	writeForeignJSONL(t, path, 1, 150, c)
	m := newTestMonitor(t, testConfig(), "")
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []monitor.Alert
	done := make(chan error)
	go func() {
		_, err := Watch(ctx, path, Options{Map: foreignMap, Follow: true, Poll: 10 * time.Millisecond}, m, func(a monitor.Alert) {
			mu.Lock()
			got = append(got, a)
			mu.Unlock()
		})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	writeForeignJSONL(t, path, 151, 320, c)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		_, ok := rulesFired(got)[monitor.RuleNaNInf]
		mu.Unlock()
		if ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f := rulesFired(got)
	if _, ok := f[monitor.RuleNaNInf]; !ok {
		t.Fatalf("follow mode missed the NaN: %+v", got)
	}
	if _, ok := f[monitor.RuleLossSpike]; !ok {
		t.Fatalf("follow mode missed the spike")
	}
}

// TestWatchBadLineCountedNotFatal: a bad line is counted, named (file:line)
// and skipped; the spike after it is still found.
func TestWatchBadLineCountedNotFatal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	c := newCurve(3)
	var b strings.Builder
	for s := int64(1); s <= 260; s++ {
		loss := c.sample(s).Values["train_loss_raw"]
		switch s {
		case 150:
			b.WriteString("{\"step\": 150, oops}\n")
			continue
		case 151:
			b.WriteString("Traceback (most recent call last):\n")
		case 200:
			loss *= 16
		}
		fmt.Fprintf(&b, `{"step": %d, "train_loss_raw": %.5f}`+"\n", s, loss)
	}
	os.WriteFile(path, []byte(b.String()), 0o644)
	m := newTestMonitor(t, testConfig(), "")
	var got []monitor.Alert
	rep, err := Watch(context.Background(), path, Options{}, m, func(a monitor.Alert) { got = append(got, a) })
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := rulesFired(got)[monitor.RuleLossSpike]; !ok || a.Step != 200 {
		t.Errorf("spike after the bad line not found: %+v", got)
	}
	if rep.BadLines != 2 || !strings.HasPrefix(rep.FirstBad, path+":150: ") || rep.Samples != 259 {
		t.Errorf("report %+v", rep)
	}
}

func TestWatchTFEventsAndStore(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SQLite, cfg.TensorBoard = true, true
	m, err := monitor.New(cfg, monitor.Options{RunDir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	c := newCurve(9)
	for s := int64(1); s <= 260; s++ {
		smp := c.sample(s)
		if s == 200 {
			smp.Values["train_loss_raw"] += 1.5
		}
		m.Observe(smp)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, src := range []struct{ path, format string }{{dir, FormatTFEvents}, {filepath.Join(dir, "metrics.sqlite"), FormatKestrel}} {
		if f, _ := DetectFormat(src.path); src.format == FormatKestrel && f != FormatKestrel {
			t.Errorf("%s detected as %s", src.path, f)
		}
		m2 := newTestMonitor(t, testConfig(), "")
		var got []monitor.Alert
		if _, err := Watch(context.Background(), src.path, Options{Format: src.format}, m2, func(a monitor.Alert) { got = append(got, a) }); err != nil {
			t.Fatal(err)
		}
		if a, ok := rulesFired(got)[monitor.RuleLossSpike]; !ok || a.Step != 200 {
			t.Errorf("%s: spike not found: %+v", src.format, got)
		}
	}
}

// TestWatchFollowsRewrittenFile: a resume rewrites metrics.jsonl by rename;
// follow mode switches to the new file and feeds only new steps.
func TestWatchFollowsRewrittenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.jsonl")
	line := func(s int) string { return fmt.Sprintf(`{"step": %d, "train_loss_raw": 2}`+"\n", s) }
	var b strings.Builder
	for s := 1; s <= 10; s++ {
		b.WriteString(line(s))
	}
	os.WriteFile(path, []byte(b.String()), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var steps []int64
	done := make(chan error)
	go func() {
		_, err := Read(ctx, path, Options{Follow: true, Poll: 5 * time.Millisecond}, func(s monitor.Sample) error {
			mu.Lock()
			steps = append(steps, s.Step)
			mu.Unlock()
			return nil
		})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	// Resume from step 8: lines 1..8 kept, then 9..12 appended, via rename.
	b.Reset()
	for s := 1; s <= 12; s++ {
		b.WriteString(line(s))
	}
	os.WriteFile(path+".tmp", []byte(b.String()), 0o644)
	os.Rename(path+".tmp", path)
	deadline := time.Now().Add(20 * time.Second) // generous: a loaded CI machine; the loop ends at 12 steps
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(steps)
		mu.Unlock()
		if n >= 12 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := "[1 2 3 4 5 6 7 8 9 10 11 12]"
	if got := fmt.Sprint(steps); got != want {
		t.Fatalf("steps %s, want %s", got, want)
	}
}

// TestParseLine: one line's fields under kestrel names — renamed,
// nested objects flattened with "/", Python's non-finite literals, batch
// arrays as lists, axis fields out of the values.
func TestParseLine(t *testing.T) {
	tests := []struct {
		name, line string
		m          map[string]string
		want       string // fmt of step, tokens, unix time, sorted values, batch
		ok         bool
	}{
		{name: "renamed and nested", line: `{"iter": 5, "loss": 2.5, "optim": {"grad_norm": 0.25}, "tokens": 640}`,
			m: map[string]string{"step": "iter", "train_loss_raw": "loss", "grad_global_norm": "optim/grad_norm"}, ok: true,
			want: "5 640 0 map[grad_global_norm:0.25 train_loss_raw:2.5] <nil>"},
		{name: "python literals", line: `{"step": 2, "a": NaN, "b": -Infinity, "c": "Inf", "d": true, "phase": "warmup"}`, ok: true,
			want: "2 0 0 map[a:NaN b:-Inf c:+Inf d:1] <nil>"},
		{name: "batch lists", line: `{"step": 3, "x": 1, "docs": [9, "d1", 7], "batch_sources": ["web", "code"], "ids": ["i0"]}`,
			m: map[string]string{"doc_ids": "docs"}, ok: true,
			want: "3 0 0 map[x:1] &{[i0] [web code] [9 d1 7]}"},
		{name: "numeric arrays flatten like the dashboard", line: `{"step": 4, "lr": [0.5, 0.25]}`, ok: true,
			want: "4 0 0 map[lr/0:0.5 lr/1:0.25] <nil>"},
		{name: "time and no step", line: `{"time": 1700000000.5, "x": 1, "steps_seen": 9}`, ok: true,
			want: "9 0 1700000000 map[steps_seen:9 x:1] <nil>"},
		{name: "rfc3339 time, line as step", line: `{"timestamp": "2026-11-21T12:00:00Z", "x": 1}`, ok: true,
			want: "7 0 1795262400 map[x:1] <nil>"},
		{name: "no values", line: `{"step": 1, "phase": "warmup"}`, want: "1 0 0 map[] <nil>"},
		{name: "aliases without a map", line: `{"iter": 5, "loss": 2.5, "lr": 0.1, "train/grad_norm": 0.5, "_runtime": 12}`, ok: true,
			want: "5 0 0 map[grad_global_norm:0.5 learning_rate:0.1 train_loss_raw:2.5] <nil>"},
		{name: "a map wins over an alias", line: `{"iter": 5, "loss": 2.5, "smooth": 2.4}`, m: map[string]string{"train_loss_raw": "smooth"}, ok: true,
			want: "5 0 0 map[loss:2.5 train_loss_raw:2.4] <nil>"},
		{name: "llm.c train line", line: `s:12 trl:3.2816 lr:0.000600 norm:1.05`, ok: true,
			want: "12 0 0 map[grad_global_norm:1.05 learning_rate:0.0006 train_loss_raw:3.2816] <nil>"},
		{name: "llm.c val line", line: `s:250 tel:3.3002`, ok: true, want: "250 0 0 map[val_loss:3.3002] <nil>"},
		{name: "nanoGPT iter line, mfu not yet estimated", line: `iter 0: loss 10.9532, time 5012.50ms, mfu -100.00%`, ok: true,
			want: "0 0 0 map[step_time:5.0125 train_loss_raw:10.9532] <nil>"},
		{name: "nanoGPT eval line", line: `step 250: train loss 1.9812, val loss 2.0701`, ok: true,
			want: "250 0 0 map[train_loss_eval:1.9812 val_loss:2.0701] <nil>"},
	}
	for _, tc := range tests {
		s, ok, err := parseLine([]byte(tc.line), runlog.NewRecord(), newMapper(tc.m), 7)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var unix int64
		if !s.Time.IsZero() {
			unix = s.Time.Unix()
		}
		var batch any = s.Batch
		if s.Batch == nil {
			batch = nil
		}
		got := fmt.Sprint(s.Step, " ", s.Tokens, " ", unix, " ", s.Values, " ", batch)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %s (ok %v), want %s (ok %v)", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, _, err := parseLine([]byte(`{"a": }`), runlog.NewRecord(), newMapper(nil), 3); err == nil || !strings.Contains(err.Error(), "offset 6") {
		t.Errorf("bad line error %v", err)
	}
	for _, bad := range []string{"number of parameters: 10.65M", "s:12 trl:abc", "iter 5: loss", "Traceback (most recent call last):"} {
		if _, _, err := parseLine([]byte(bad), runlog.NewRecord(), newMapper(nil), 3); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
