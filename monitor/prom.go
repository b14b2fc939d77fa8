package monitor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kestrel-lm/kestrel/internal/hostcheck"
)

// PrometheusSink serves the latest value of every metric on /metrics, named
// and typed by the registry (see PromName): a gauge
// kestrel_<name>{variant="layer3/head1"} (kestrel_step_time_seconds for a
// time in seconds), or for a counter (tokens_seen, skipped_updates …)
// kestrel_<name>_total. Names the registry does not know are untyped. It
// also serves kestrel_step, kestrel_alerts_total{severity,rule} and the
// heartbeat of the latest step: kestrel_last_step_time_seconds and
// kestrel_seconds_since_step (computed when scraped), so
// `time() - kestrel_last_step_time_seconds > N` alerts on a run that
// stopped stepping. The exposition passes promtool check metrics.
type PrometheusSink struct {
	reg    *prometheus.Registry
	mu     sync.Mutex
	latest map[string]map[string]float64 // base name -> variant -> latest value
	step   prometheus.Gauge
	alerts *prometheus.CounterVec
	srv    *http.Server
	ln     net.Listener
	// lastStep is when the latest sample's step completed (zero: none yet).
	lastStep time.Time
	now      func() time.Time // the clock of seconds_since_step
}

// NewPrometheusSink listens on addr (a bare ":PORT" binds to loopback
// 127.0.0.1) and serves /metrics until Close, to requests whose Host header
// names the server: the address scraped (localhost too on loopback) or
// addr's host name (internal/hostcheck); others get 403.
func NewPrometheusSink(addr string) (*PrometheusSink, error) {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("monitor.prometheus_addr %q: %w", addr, err)
	}
	p := &PrometheusSink{reg: prometheus.NewRegistry(), latest: map[string]map[string]float64{}, ln: ln, now: time.Now}
	p.step = prometheus.NewGauge(prometheus.GaugeOpts{Name: "kestrel_step", Help: "latest optimizer step seen by the monitor"})
	p.alerts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kestrel_alerts_total", Help: "alerts fired by the monitor"}, []string{"severity", "rule"})
	p.reg.MustRegister(p.step, p.alerts, (*promValues)(p))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{}))
	// Only requests whose Host names this server (DNS rebinding), as the
	// dashboard: internal/hostcheck.
	h := hostcheck.Handler(mux, "kestrel Prometheus endpoint", hostcheck.Names(addr))
	p.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// Addr is the address actually listened on.
func (p *PrometheusSink) Addr() string { return p.ln.Addr().String() }

// promRenames are the registry names whose Prometheus name is not derived
// by PromName's rules: abbreviations the Prometheus naming conventions
// (and promtool check metrics) reject, and the Unix-time convention.
var promRenames = map[string]string{
	"tokens_per_sec":      "tokens_per_second",
	"adam_m_norm":         "adam_exp_avg_norm",
	"adam_v_norm":         "adam_exp_avg_sq_norm",
	"last_step_unix_time": "last_step_time_seconds",
}

// PromName is the Prometheus name of a registry base name, following the
// Prometheus naming conventions (promtool check metrics): kestrel_<name>
// with characters outside [a-zA-Z0-9_] as "_" (promRenames first); a
// metric in seconds (unit "s") or bytes ends in _seconds / _bytes unless
// its name already says so; a counter ends in _total. Names the registry
// does not know keep kestrel_<name> and are served untyped.
func PromName(base string) string {
	var b strings.Builder
	b.WriteString("kestrel_")
	name := base
	if r, ok := promRenames[base]; ok {
		name = r
	}
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	m, ok := byName[base]
	if !ok {
		return b.String()
	}
	parts := strings.Split(name, "_")
	for _, u := range [...]struct{ unit, word string }{{"s", "seconds"}, {"bytes", "bytes"}} {
		if m.Unit == u.unit && !slices.Contains(parts, u.word) {
			b.WriteString("_" + u.word)
		}
	}
	if m.Kind == Counter {
		b.WriteString("_total")
	}
	return b.String()
}

func (p *PrometheusSink) set(name string, v float64) {
	base, variant := BaseName(name), ""
	if len(name) > len(base) {
		variant = name[len(base)+1:]
	}
	vs := p.latest[base]
	if vs == nil {
		vs = map[string]float64{}
		p.latest[base] = vs
	}
	vs[variant] = v
}

// promValues collects the sink's latest values as constant metrics of the
// registry's type. It describes nothing up front (the names are only known
// as samples arrive), which makes it an unchecked collector.
type promValues PrometheusSink

// Describe implements prometheus.Collector.
func (*promValues) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c *promValues) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bases := make([]string, 0, len(c.latest))
	for b := range c.latest {
		bases = append(bases, b)
	}
	sort.Strings(bases)
	// The sink's own series, and a name two bases sanitise to, are served once.
	seen := map[string]bool{"kestrel_step": true, "kestrel_alerts_total": true}
	if !c.lastStep.IsZero() {
		for _, h := range []struct {
			base string
			v    float64
		}{{heartbeatMetric, unix(c.lastStep)}, {ageMetric, max(0, c.now().Sub(c.lastStep).Seconds())}} {
			name := PromName(h.base)
			seen[name] = true
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, byName[h.base].Help+" ("+byName[h.base].Unit+")", nil, nil), prometheus.GaugeValue, h.v)
		}
	}
	for _, base := range bases {
		name := PromName(base)
		if seen[name] {
			continue
		}
		seen[name] = true
		help, typ := "kestrel metric "+base+" (not in the registry: untyped)", prometheus.UntypedValue
		if m, ok := byName[base]; ok {
			help = m.Help + " (" + m.Unit + ")"
			typ = prometheus.GaugeValue
			if m.Kind == Counter {
				typ = prometheus.CounterValue
			}
		}
		desc := prometheus.NewDesc(name, help, []string{"variant"}, nil)
		for variant, v := range c.latest[base] {
			ch <- prometheus.MustNewConstMetric(desc, typ, v, variant)
		}
	}
}

// WriteSample publishes the sample's values.
func (p *PrometheusSink) WriteSample(s *Sample) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step.Set(float64(s.Step))
	if !s.Time.IsZero() {
		p.lastStep = s.Time
	}
	for k, v := range s.Values {
		p.set(k, v)
	}
	if _, ok := s.Values["tokens_seen"]; !ok {
		p.set("tokens_seen", float64(s.Tokens))
	}
	return nil
}

// WriteEvent publishes an event's values (eval results).
func (p *PrometheusSink) WriteEvent(e *Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range e.Values {
		p.set(k, v)
	}
	if e.Kind == EventCheckpoint {
		ok := 0.0
		if e.OK {
			ok = 1
		}
		p.set("checkpoint_ok", ok)
	}
	return nil
}

// WriteAlert counts the alert.
func (p *PrometheusSink) WriteAlert(a *Alert) error {
	p.alerts.WithLabelValues(string(a.Severity), a.Rule).Inc()
	return nil
}

// Close stops the server.
func (p *PrometheusSink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}
