// Package monitor is kestrel's ICU panel: a registry of typed metrics,
// vitals and probes, SEV0/1/2 alerts with runbooks, a loss-spike
// classifier, and sinks (SQLite store, TensorBoard, Prometheus, Perfetto).
// It receives numbers through a small interface and never touches tensors,
// so it can watch any trainer.
package monitor

// Config is the [monitor] section of a run config.
type Config struct {
	Enabled        bool   `toml:"enabled" comment:"run the monitor beside training"`
	PrometheusAddr string `toml:"prometheus_addr" comment:"serve Prometheus /metrics on this address while training (empty = off)"`
}

// DefaultConfig returns the defaults of the [monitor] section.
func DefaultConfig() Config { return Config{Enabled: true} }
