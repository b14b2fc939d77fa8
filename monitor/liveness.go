package monitor

import (
	"fmt"
	"math"
	"time"
)

// Liveness rules: is the run still making progress, and is anyone still
// hearing from it?
const (
	// RuleStalled is the SEV1 of the step watchdog: a training step is
	// still running after max(stalled_factor × median step time,
	// stalled_min_seconds).
	RuleStalled = "stalled"
	// RuleBlackout is the SEV0 of kestrel watch --follow: the followed
	// source wrote no record for max(blackout_factor × its median interval
	// between records, blackout_min_seconds).
	RuleBlackout = "monitoring_blackout"
	// RuleTokensFlat is the SEV1 of a tokens_seen counter that stopped
	// growing while steps advance.
	RuleTokensFlat = "tokens_flatline"
)

// The heartbeat metrics (registry names) the Prometheus sink serves.
const (
	heartbeatMetric = "last_step_unix_time"
	ageMetric       = "seconds_since_step"
)

// liveness is the state of the liveness rules. Monitor.mu guards it.
type liveness struct {
	// The step watchdog: armed from StepStarted to the step's Observe.
	running   bool
	step      int64     // the running step
	started   time.Time // when it started
	gen       uint64    // StepStarted calls so far (a stale timer's is older)
	timer     *time.Timer
	stalledAt time.Time // when the running step fired stalled (zero: not yet)
	limit     time.Duration
	durs      *ring // wall seconds of the last completed (armed) steps
	lastDone  int64 // the last completed step
	tokens    int64 // tokens_seen of the latest sample (for alerts)

	// monitoring_blackout: silent since blackoutAt (zero: not silent).
	blackoutAt  time.Time
	blackoutFor time.Duration

	// tokens_flatline.
	tokSeen bool
	tokVal  float64 // tokens_seen when it last changed
	tokStep int64   // the step at which it last changed
	tokFlat bool    // fired for the current flatline
}

// StepStarted tells the monitor that the trainer began step (before its
// data wait). It arms the stall watchdog until the step's sample reaches
// Observe: while armed, a step that runs longer than
// max(stalled_factor × median step time, stalled_min_seconds) fires one
// SEV1 stalled alert from a timer goroutine, before the step ends. Before
// the first step completes the limit is stalled_factor ×
// stalled_min_seconds. Evaluations and checkpoints run between a step's
// end and the next start, so they never count.
func (m *Monitor) StepStarted(step int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &m.live
	l.disarm()
	if m.closed || m.cfg.StalledFactor <= 0 {
		return
	}
	if l.durs == nil {
		l.durs = newRing(m.cfg.Window)
	}
	var limit time.Duration
	if l.durs.len() == 0 {
		limit = seconds(m.cfg.StalledFactor * m.cfg.StalledMinSeconds)
	} else {
		med := median(l.durs.values())
		limit = seconds(max(m.cfg.StalledFactor*med, m.cfg.StalledMinSeconds))
	}
	l.gen++
	l.running, l.step, l.started, l.stalledAt, l.limit = true, step, time.Now(), time.Time{}, limit
	if limit <= 0 {
		return // no floor and no step time yet: nothing to compare with
	}
	gen := l.gen
	l.timer = time.AfterFunc(limit, func() { m.stallTimer(gen) })
}

// seconds converts float seconds to a Duration (saturating).
func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// disarm stops the watchdog's timer. Monitor.mu is held.
func (l *liveness) disarm() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.running = false
}

// stallTimer fires the stalled alert when the step armed as generation gen
// is still running.
func (m *Monitor) stallTimer(gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &m.live
	if m.closed || !l.running || l.gen != gen || !l.stalledAt.IsZero() {
		return
	}
	now := time.Now()
	l.stalledAt = now
	el := now.Sub(l.started).Seconds()
	med := "no step completed yet"
	if l.durs != nil && l.durs.len() > 0 {
		med = fmt.Sprintf("median step %.3g s over the last %d steps", median(l.durs.values()), l.durs.len())
	}
	msg := fmt.Sprintf("step %d is still running after %.1f s (limit %.1f s = max(%g × median step time, %g s); %s; last completed step %d)",
		l.step, el, l.limit.Seconds(), m.cfg.StalledFactor, m.cfg.StalledMinSeconds, med, l.lastDone)
	m.emit([]Alert{newAlert(l.step, l.tokens, RuleStalled, "step_time", el, l.limit.Seconds(), msg)}, now)
}

// Silence tells the monitor that a followed source wrote no record for
// silent since step lastStep; median is its median interval between
// records (0 when unknown). When silent exceeds max(blackout_factor ×
// median, blackout_min_seconds) it fires SEV0 monitoring_blackout, once
// per silence: the next sample Observe receives ends it.
func (m *Monitor) Silence(lastStep int64, silent, median time.Duration) []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &m.live
	if m.closed || m.cfg.BlackoutFactor <= 0 || !l.blackoutAt.IsZero() {
		return nil
	}
	limit := max(seconds(m.cfg.BlackoutFactor*median.Seconds()), seconds(m.cfg.BlackoutMinSeconds))
	if silent <= limit {
		return nil
	}
	now := time.Now()
	l.blackoutAt, l.blackoutFor = now, silent
	medTxt := "median interval unknown"
	if median > 0 {
		medTxt = fmt.Sprintf("median interval between records %.3g s", median.Seconds())
	}
	msg := fmt.Sprintf("no record for %.1f s after step %d (limit %.1f s = max(%g × median interval, %g s); %s): the run stopped writing or its log moved",
		silent.Seconds(), lastStep, limit.Seconds(), m.cfg.BlackoutFactor, m.cfg.BlackoutMinSeconds, medTxt)
	a := newAlert(lastStep, l.tokens, RuleBlackout, ageMetric, silent.Seconds(), limit.Seconds(), msg)
	return m.emit([]Alert{a}, now)
}

// liveObserve runs the liveness rules on a step's sample: it disarms the
// stall watchdog (recording the step's wall time, and the recovery of a
// stalled step), ends a blackout, and checks tokens_seen for a flatline.
// Monitor.mu is held.
func (m *Monitor) liveObserve(s *Sample) []Alert {
	l := &m.live
	now := time.Now()
	if l.running {
		d := now.Sub(l.started)
		if l.durs != nil {
			l.durs.push(d.Seconds())
		}
		if !l.stalledAt.IsZero() {
			m.note(s, fmt.Sprintf("stall recovered: step %d completed after %.1f s (%.1f s after the stalled alert)",
				l.step, d.Seconds(), now.Sub(l.stalledAt).Seconds()))
		}
		l.disarm()
	}
	l.lastDone, l.tokens = s.Step, s.Tokens
	if !l.blackoutAt.IsZero() {
		m.note(s, fmt.Sprintf("monitoring blackout over: records resume at step %d, %.1f s after the alert (silent %.1f s when it fired)",
			s.Step, now.Sub(l.blackoutAt).Seconds(), l.blackoutFor.Seconds()))
		l.blackoutAt = time.Time{}
	}
	var out []Alert
	if n := m.cfg.TokensFlatSteps; n > 0 {
		if x, ok := s.Values["tokens_seen"]; ok && finite(x) {
			switch {
			case !l.tokSeen || x != l.tokVal || s.Step < l.tokStep:
				// First value, growth, or a rewind (resume): a new baseline.
				if l.tokFlat && x > l.tokVal {
					m.note(s, fmt.Sprintf("tokens_seen grows again at step %d (%.0f, flat since step %d)", s.Step, x, l.tokStep))
				}
				l.tokSeen, l.tokVal, l.tokStep, l.tokFlat = true, x, s.Step, false
			case !l.tokFlat && s.Step-l.tokStep >= int64(n):
				l.tokFlat = true
				out = append(out, newAlert(s.Step, s.Tokens, RuleTokensFlat, "tokens_seen", x, float64(n),
					fmt.Sprintf("tokens_seen stuck at %.0f from step %d to step %d (%d steps ≥ tokens_flat_steps = %d): steps advance but train on no tokens",
						x, l.tokStep, s.Step, s.Step-l.tokStep, n)))
			}
		}
	}
	return out
}

// note logs a liveness recovery and records it as a note event in the
// sinks. Monitor.mu is held.
func (m *Monitor) note(s *Sample, msg string) {
	m.log.Info("monitor", "step", s.Step, "msg", msg)
	e := Event{Kind: EventNote, Step: s.Step, Tokens: s.Tokens, Time: s.Time, OK: true, Detail: msg}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	for _, sk := range m.sinks {
		m.keep(sk.WriteEvent(&e))
	}
}
