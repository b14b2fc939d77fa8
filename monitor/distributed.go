package monitor

import (
	"fmt"
	"time"
)

// The data-parallel rules (their runbooks are in runbooks.go).
const (
	RuleRankHang  = "rank_hang" // SEV0: a rank never reached a collective
	RuleStraggler = "straggler" // SEV1: one rank slower than the others
)

// stragglerRule is the data-parallel family: the SEV1 straggler (its
// state is the run of steps with one rank slowest) and every rank's host
// (from SetRankHosts), which straggler and rank_hang alerts name. It is
// live only: the ranks and hosts of an earlier start are no evidence.
type stragglerRule struct {
	ctx      *ruleCtx
	hosts    []string
	slowRank int // slowest rank of the current run of steps over the ratio
	run      int // consecutive steps over straggler_ratio with that rank slowest
}

// host names rank r ("" when unknown).
func (d *stragglerRule) host(r int) string {
	if r >= 0 && r < len(d.hosts) {
		return d.hosts[r]
	}
	return ""
}

func onHost(h string) string {
	if h == "" {
		return ""
	}
	return " on " + h
}

func newStragglerRule(c *ruleCtx) *stragglerRule { return &stragglerRule{ctx: c} }

func (d *stragglerRule) liveOnly() {}

// observe fires the SEV1 straggler when straggler_ratio (max ÷ median of
// the ranks' step times) stays above the threshold for straggler_steps
// steps with the same slowest rank (straggler_rank).
func (d *stragglerRule) observe(s *Sample, out *[]Alert) {
	c := d.ctx
	x, ok := s.Values["straggler_ratio"]
	rk, ok2 := s.Values["straggler_rank"]
	if !ok || !ok2 || c.cfg.StragglerRatio <= 0 || !finite(x) {
		return
	}
	rank := int(rk)
	if x <= c.cfg.StragglerRatio {
		d.run = 0
		return
	}
	if d.run == 0 || rank != d.slowRank {
		d.slowRank, d.run = rank, 0
	}
	d.run++
	if d.run >= max(1, c.cfg.StragglerSteps) {
		t := s.Values[fmt.Sprintf("rank_step_time/rank%d", rank)]
		c.fire(out, s, RuleStraggler, "straggler_ratio", x, c.cfg.StragglerRatio,
			fmt.Sprintf("rank %d%s is the straggler: its step time %.3gs is %.2f× the median rank's for %d steps", rank, onHost(d.host(rank)), t, x, d.run))
	}
}

// SetRankHosts tells the monitor the host of every rank of a data-parallel
// run, so that the straggler and rank_hang alerts name them.
func (m *Monitor) SetRankHosts(hosts []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules.dist.hosts = append([]string(nil), hosts...)
}

// RankHang fires the SEV0 rank_hang: in a data-parallel run, the ranks in
// missing never reached collective op at step within timeout (none known:
// the alert says so). It returns the alerts written.
func (m *Monitor) RankHang(step int64, op string, missing []int, hosts []string, timeout time.Duration) []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	who := "an unknown rank"
	first := -1.0
	if len(missing) > 0 {
		who = ""
		for i, r := range missing {
			h := ""
			if i < len(hosts) {
				h = hosts[i]
			}
			if h == "" {
				h = m.rules.dist.host(r)
			}
			if i > 0 {
				who += ", "
			}
			who += fmt.Sprintf("rank %d%s", r, onHost(h))
		}
		first = float64(missing[0])
	}
	a := newAlert(step, 0, RuleRankHang, "rank_hang", first, timeout.Seconds(),
		fmt.Sprintf("%s never reached the %s of step %d within %v: the run is hung on it", who, op, step, timeout))
	return m.emit([]Alert{a}, time.Now())
}
