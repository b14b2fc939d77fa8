package monitor

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuf is a log buffer the watchdog's timer goroutine may write to.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func countRule(as []Alert, rule string) int {
	n := 0
	for _, a := range as {
		if a.Rule == rule {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or d passed.
func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

// TestStalledWatchdog: a step that runs past max(factor × median step
// time, floor) fires one SEV1 stalled while it is still running; its
// completion is logged as a recovery; time between steps (evaluation,
// checkpoint) never fires.
func TestStalledWatchdog(t *testing.T) {
	cfg := testConfig()
	cfg.StalledFactor, cfg.StalledMinSeconds = 10, 0.15
	var logs syncBuf
	m, err := New(cfg, Options{RunDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := newCurve(1)
	step := func(s int64, d time.Duration) []Alert {
		m.StepStarted(s)
		time.Sleep(d)
		return m.Observe(c.sample(s))
	}
	for s := int64(1); s <= 5; s++ {
		step(s, time.Millisecond)
	}
	// A long "evaluation" between steps: the watchdog is not armed.
	time.Sleep(400 * time.Millisecond)
	if n := countRule(m.Alerts(), RuleStalled); n != 0 {
		t.Fatalf("stalled fired %d times between steps", n)
	}
	// Step 6 hangs: the alert comes while it runs, once.
	m.StepStarted(6)
	start := time.Now()
	if !waitFor(3*time.Second, func() bool { return countRule(m.Alerts(), RuleStalled) > 0 }) {
		t.Fatal("no stalled alert while step 6 hangs")
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("stalled fired after %v, before the 0.15 s floor", el)
	}
	time.Sleep(400 * time.Millisecond) // still hanging: no second alert
	var a Alert
	for _, x := range m.Alerts() {
		if x.Rule == RuleStalled {
			a = x
		}
	}
	if n := countRule(m.Alerts(), RuleStalled); n != 1 {
		t.Errorf("stalled fired %d times for one stall", n)
	}
	if a.Severity != SEV1 || a.Step != 6 || a.Metric != "step_time" || !strings.Contains(a.Message, "step 6 is still running") || a.Runbook == "" {
		t.Errorf("alert %+v", a)
	}
	if got := m.Observe(c.sample(6)); countRule(got, RuleStalled) != 0 {
		t.Errorf("the completed step fired again: %v", got)
	}
	if !strings.Contains(logs.String(), "stall recovered: step 6 completed") {
		t.Errorf("no recovery logged:\n%s", logs.String())
	}
	// Back to normal: quick steps do not fire.
	for s := int64(7); s <= 9; s++ {
		step(s, time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := countRule(m.Alerts(), RuleStalled); n != 1 {
		t.Errorf("stalled fired %d times in all, want 1", n)
	}
	// The alert is in alerts.jsonl beside the others.
	m.Close()
	if m.live.timer != nil {
		t.Error("Close left the watchdog armed")
	}
}

// TestStalledLimit: the limit is max(factor × median, floor), and
// factor × floor before any step completed; factor 0 turns it off.
func TestStalledLimit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		factor, floor float64
		durs          []float64
		want          time.Duration
	}{
		{"first step", 10, 60, nil, 600 * time.Second},
		{"floor", 10, 60, []float64{0.1, 0.2, 0.3}, 60 * time.Second},
		{"median", 10, 60, []float64{8, 9, 100}, 90 * time.Second},
		{"off", 0, 60, []float64{1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.StalledFactor, cfg.StalledMinSeconds = tc.factor, tc.floor
			m := newTestMonitor(t, cfg, "")
			m.live.durs = newRing(cfg.Window)
			for _, d := range tc.durs {
				m.live.durs.push(d)
			}
			m.StepStarted(1)
			defer m.live.disarm()
			if tc.want == 0 {
				if m.live.running {
					t.Fatal("watchdog armed with stalled_factor = 0")
				}
				return
			}
			if m.live.limit != tc.want {
				t.Errorf("limit %v, want %v", m.live.limit, tc.want)
			}
		})
	}
}

// TestSilenceBlackout: Silence fires SEV0 monitoring_blackout past
// max(factor × median, floor), once per silence; a new sample ends it.
func TestSilenceBlackout(t *testing.T) {
	cfg := testConfig()
	cfg.BlackoutFactor, cfg.BlackoutMinSeconds = 10, 1
	m := newTestMonitor(t, cfg, t.TempDir())
	c := newCurve(2)
	m.Observe(c.sample(1))
	ms := time.Millisecond
	for _, tc := range []struct {
		silent, median time.Duration
		fire           bool
	}{
		{500 * ms, 0, false},         // under the floor, median unknown
		{1500 * ms, 0, true},         // over the floor
		{3 * time.Second, 0, false},  // the same silence: fired already
		{observe, 0, false},          // records resume
		{1500 * ms, 200 * ms, false}, // 10 × 200 ms = 2 s > 1.5 s
		{2500 * ms, 200 * ms, true},  // past 2 s
		{2600 * ms, 200 * ms, false}, // once
		{observe, 0, false},          //
		{900 * ms, 10 * ms, false},   // a fast run: the floor holds
		{1100 * ms, 10 * ms, true},   //
	} {
		if tc.silent == observe {
			m.Observe(c.sample(2))
			continue
		}
		got := m.Silence(1, tc.silent, tc.median)
		if fired := countRule(got, RuleBlackout) == 1; fired != tc.fire {
			t.Errorf("silent %v median %v: fired %v, want %v (%v)", tc.silent, tc.median, fired, tc.fire, got)
		}
		if tc.fire && len(got) == 1 && (got[0].Severity != SEV0 || got[0].Metric != ageMetric || got[0].Evidence == "") {
			t.Errorf("alert %+v (want SEV0 with an incident bundle)", got[0])
		}
	}
	cfg.BlackoutFactor = 0
	off := newTestMonitor(t, cfg, "")
	if got := off.Silence(1, time.Hour, time.Second); len(got) != 0 {
		t.Errorf("blackout_factor = 0 fired %v", got)
	}
}

// observe marks a row of TestSilenceBlackout that feeds a sample.
const observe = time.Duration(-1)

// TestTokensFlatline: tokens_seen stuck for tokens_flat_steps steps while
// steps advance fires SEV1 once per flatline; growth, a source without
// tokens_seen, or a rewind do not.
func TestTokensFlatline(t *testing.T) {
	const n = 5
	for _, tc := range []struct {
		name   string
		tokens func(step int64) (float64, bool)
		want   []int64 // steps that fire
	}{
		{"growing", func(s int64) (float64, bool) { return float64(s * 100), true }, nil},
		{"no tokens_seen", func(s int64) (float64, bool) { return 0, false }, nil},
		{"flat from step 10", func(s int64) (float64, bool) { return float64(min(s, 10) * 100), true }, []int64{15}},
		{"flat twice", func(s int64) (float64, bool) {
			switch {
			case s < 10:
				return float64(s * 100), true
			case s < 20:
				return 1000, true
			case s < 30:
				return float64(s * 100), true
			}
			return 3000, true
		}, []int64{15, 35}},
		{"flat for fewer steps", func(s int64) (float64, bool) { return float64(s / 4 * 100), true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.TokensFlatSteps = n
			m := newTestMonitor(t, cfg, "")
			c := newCurve(3)
			var got []int64
			for s := int64(1); s <= 40; s++ {
				smp := c.sample(s)
				if x, ok := tc.tokens(s); ok {
					smp.Values["tokens_seen"] = x
				}
				for _, a := range m.Observe(smp) {
					if a.Rule == RuleTokensFlat {
						if a.Severity != SEV1 || a.Runbook == "" {
							t.Errorf("alert %+v", a)
						}
						got = append(got, a.Step)
					}
				}
			}
			if len(got) != len(tc.want) || (len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1])) {
				t.Errorf("fired at steps %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPrometheusHeartbeat: /metrics serves the latest step's completion
// time and its age, so a stale run can be alerted on from outside.
func TestPrometheusHeartbeat(t *testing.T) {
	p, err := NewPrometheusSink(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.now = func() time.Time { return t0.Add(90 * time.Second) }
	scrape := func() string {
		resp, err := http.Get("http://" + p.Addr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := scrape(); strings.Contains(body, "kestrel_last_step_time_seconds") {
		t.Errorf("heartbeat before any step:\n%s", body)
	}
	p.WriteSample(&Sample{Step: 7, Time: t0.Add(30 * time.Second), Values: map[string]float64{"train_loss_raw": 2}})
	body := scrape()
	for _, want := range []string{"# TYPE kestrel_last_step_time_seconds gauge", "kestrel_last_step_time_seconds " + strconv.FormatFloat(float64(t0.Unix()+30), 'g', -1, 64),
		"# TYPE kestrel_seconds_since_step gauge", "kestrel_seconds_since_step 60"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
