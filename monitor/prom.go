package monitor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// PrometheusSink serves the latest value of every metric on /metrics:
// kestrel_<name>{variant="layer3/head1"} per registry name, plus
// kestrel_step, kestrel_tokens_seen and kestrel_alerts_total{severity,rule}.
type PrometheusSink struct {
	reg    *prometheus.Registry
	mu     sync.Mutex
	gauges map[string]*prometheus.GaugeVec
	step   prometheus.Gauge
	alerts *prometheus.CounterVec
	srv    *http.Server
	ln     net.Listener
}

// NewPrometheusSink listens on addr (a bare ":PORT" binds to loopback
// 127.0.0.1) and serves /metrics until Close.
func NewPrometheusSink(addr string) (*PrometheusSink, error) {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("monitor.prometheus_addr %q: %w", addr, err)
	}
	p := &PrometheusSink{reg: prometheus.NewRegistry(), gauges: map[string]*prometheus.GaugeVec{}, ln: ln}
	p.step = prometheus.NewGauge(prometheus.GaugeOpts{Name: "kestrel_step", Help: "latest optimizer step seen by the monitor"})
	p.alerts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kestrel_alerts_total", Help: "alerts fired by the monitor"}, []string{"severity", "rule"})
	p.reg.MustRegister(p.step, p.alerts)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{}))
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// Addr is the address actually listened on.
func (p *PrometheusSink) Addr() string { return p.ln.Addr().String() }

func promName(base string) string {
	var b strings.Builder
	b.WriteString("kestrel_")
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func (p *PrometheusSink) set(name string, v float64) {
	base, variant := BaseName(name), ""
	if len(name) > len(base) {
		variant = name[len(base)+1:]
	}
	g := p.gauges[base]
	if g == nil {
		help := "kestrel metric " + base
		if m, ok := Lookup(base); ok {
			help = m.Help + " (" + m.Unit + ")"
		}
		g = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: promName(base), Help: help}, []string{"variant"})
		if err := p.reg.Register(g); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return
			}
			g = are.ExistingCollector.(*prometheus.GaugeVec)
		}
		p.gauges[base] = g
	}
	g.WithLabelValues(variant).Set(v)
}

// WriteSample publishes the sample's values.
func (p *PrometheusSink) WriteSample(s *Sample) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step.Set(float64(s.Step))
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
