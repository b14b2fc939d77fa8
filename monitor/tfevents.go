package monitor

import (
	"sort"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/tfevents"
)

// TFEventsWriter is the TensorBoard sink: one events.out.tfevents.* file
// with a scalar per metric value and histograms per layer.
type TFEventsWriter struct {
	w       *tfevents.Writer
	flushed time.Time

	// Reused from sample to sample (WriteSample runs on the monitor's lock).
	names    []string
	scalars  []tfevents.Scalar
	variants map[string][]float64
}

// NewTFEventsWriter creates events.out.tfevents.<unix>.<host> in dir and
// writes the file_version record.
func NewTFEventsWriter(dir string, now time.Time) (*TFEventsWriter, error) {
	w, err := tfevents.Create(dir, now.Unix(), unix(now))
	if err != nil {
		return nil, err
	}
	return &TFEventsWriter{w: w}, nil
}

// Path is the event file's path.
func (t *TFEventsWriter) Path() string { return t.w.Path() }

// WriteSample writes one Event with every finite value as a scalar, the
// sample's histograms, and, for each metric reported per layer/head, a
// histogram over its variants (tag "<name>/by_variant").
func (t *TFEventsWriter) WriteSample(s *Sample) error {
	e := tfevents.Event{WallTime: unix(s.Time), Step: s.Step, Scalars: t.scalars[:0]}
	names := t.names[:0]
	for k, v := range s.Values {
		if finite(v) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	t.names = names
	if t.variants == nil {
		t.variants = map[string][]float64{}
	}
	variants := t.variants
	for k, xs := range variants { // keep each slice's storage; a name not seen this sample stays empty
		variants[k] = xs[:0]
	}
	for _, k := range names {
		e.Scalars = append(e.Scalars, tfevents.Scalar{Tag: k, Value: float32(s.Values[k])})
		if i := strings.IndexByte(k, '/'); i > 0 && strings.HasPrefix(k[i+1:], "layer") {
			variants[k[:i]] = append(variants[k[:i]], s.Values[k])
		}
	}
	hn := make([]string, 0, len(s.Histograms))
	for k := range s.Histograms {
		hn = append(hn, k)
	}
	sort.Strings(hn)
	for _, k := range hn {
		h := s.Histograms[k]
		if len(h.Edges) != len(h.Counts)+1 {
			continue
		}
		e.Histos = append(e.Histos, tfevents.Histo{Tag: k, Min: h.Min, Max: h.Max, Num: h.Total(), Sum: h.Sum, Sq: h.SumSq,
			BucketLimit: append([]float64(nil), h.Edges[1:]...), BucketCount: append([]float64(nil), h.Counts...)})
	}
	vn := make([]string, 0, len(variants))
	for k := range variants {
		vn = append(vn, k)
	}
	sort.Strings(vn)
	for _, k := range vn {
		if xs := variants[k]; len(xs) >= 2 {
			e.Histos = append(e.Histos, tfevents.Histogram(k+"/by_variant", xs, 16))
		}
	}
	t.scalars = e.Scalars[:0]
	if err := t.w.Write(e); err != nil {
		return err
	}
	// Flush at most once a second so readers see recent steps without a
	// write syscall per step.
	if now := time.Now(); now.Sub(t.flushed) >= time.Second {
		t.flushed = now
		return t.w.Flush()
	}
	return nil
}

// WriteEvent writes event values (e.g. an eval's val_loss) as scalars.
func (t *TFEventsWriter) WriteEvent(e *Event) error {
	if len(e.Values) == 0 {
		return nil
	}
	return t.WriteSample(&Sample{Step: e.Step, Time: e.Time, Values: e.Values})
}

// WriteAlert is a no-op: TensorBoard has no alert channel.
func (t *TFEventsWriter) WriteAlert(*Alert) error { return nil }

// Close flushes and closes the file.
func (t *TFEventsWriter) Close() error { return t.w.Close() }
