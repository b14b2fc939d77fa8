package monitor

import "github.com/kestrel-lm/kestrel/internal/runlog"

// Store is the metrics.sqlite sink: every sample, event and alert goes to
// the run's metric store (schema and reader in internal/runlog), written by
// a background goroutine in batched transactions.
type Store struct{ *runlog.Store }

// OpenStore opens (creating if needed) the store at path.
func OpenStore(path string) (*Store, error) {
	s, err := runlog.OpenStore(path)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}

// WriteSample implements Sink.
func (s *Store) WriteSample(smp *Sample) error {
	return s.WriteValues(smp.Step, smp.Tokens, smp.Time, smp.Values)
}

// ReadStore reads a metrics.sqlite back as samples ordered by step (NULL
// values come back as NaN) and its alerts in insertion order.
func ReadStore(path string) ([]Sample, []Alert, error) {
	rows, alerts, err := runlog.ReadStore(path)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Sample, len(rows))
	for i, r := range rows {
		out[i] = Sample{Step: r.Step, Tokens: r.Tokens, Time: r.Time, Values: r.Values}
	}
	return out, alerts, nil
}
