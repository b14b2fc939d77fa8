package monitor

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kestrel-lm/kestrel/internal/tfevents"
)

func TestTFEventsWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewTFEventsWriter(dir, t0)
	if err != nil {
		t.Fatal(err)
	}
	smp := Sample{Step: 7, Time: t0.Add(time.Second), Values: map[string]float64{
		"train_loss_raw": 3.25, "max_attn_logit/layer0/head0": 10, "max_attn_logit/layer1/head0": 20, "bad": math.NaN()},
		Histograms: map[string]Histogram{"residual/layer0": {Edges: []float64{0, 1, 2}, Counts: []float64{3, 4}, Min: 0.1, Max: 1.9, Sum: 4, SumSq: 6}}}
	if err := w.WriteSample(&smp); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	recs, err := tfevents.ReadRecords(bytes.NewReader(b))
	if err != nil || len(recs) != 2 {
		t.Fatalf("records %d err %v", len(recs), err)
	}
	e0, _ := tfevents.Unmarshal(recs[0])
	if e0.FileVersion != "brain.Event:2" {
		t.Errorf("first event %+v", e0)
	}
	e, err := tfevents.Unmarshal(recs[1])
	if err != nil {
		t.Fatal(err)
	}
	if e.Step != 7 || e.WallTime != unix(t0.Add(time.Second)) || len(e.Scalars) != 3 {
		t.Fatalf("event %+v", e)
	}
	if e.Scalars[2].Tag != "train_loss_raw" || e.Scalars[2].Value != 3.25 {
		t.Errorf("scalars %+v", e.Scalars)
	}
	if len(e.Histos) != 2 || e.Histos[0].Tag != "residual/layer0" || e.Histos[0].Num != 7 ||
		!equalF(e.Histos[0].BucketLimit, []float64{1, 2}) || !equalF(e.Histos[0].BucketCount, []float64{3, 4}) {
		t.Errorf("histos %+v", e.Histos)
	}
	if e.Histos[1].Tag != "max_attn_logit/by_variant" || e.Histos[1].Num != 2 || e.Histos[1].Max != 20 {
		t.Errorf("variant histo %+v", e.Histos[1])
	}
	// Re-encoding the decoded event gives the same bytes.
	if re := tfevents.Marshal(e); !bytes.Equal(re, recs[1]) {
		t.Errorf("re-encoded event differs")
	}
}

func equalF(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStoreRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.sqlite")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	s.SetRunInfo("name", "test")
	for i := int64(1); i <= 100; i++ {
		s.WriteSample(&Sample{Step: i, Tokens: i * 10, Time: t0.Add(time.Duration(i) * time.Second),
			Values: map[string]float64{"train_loss_raw": 1 / float64(i), "max_attn_logit/layer0/head1": float64(i), "bad": math.Inf(1)}})
	}
	s.WriteEvent(&Event{Kind: EventCheckpoint, Step: 50, OK: true, Path: "checkpoints/step-00000050", Time: t0})
	s.WriteAlert(&Alert{Step: 60, Severity: SEV1, Rule: RuleLossSpike, Message: "m", Verdict: VerdictRecoverable, Value: 2, Threshold: 1})
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	samples, alerts, err := ReadStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 100 || samples[41].Step != 42 || samples[41].Tokens != 420 || samples[41].Values["train_loss_raw"] != 1.0/42 ||
		samples[41].Values["max_attn_logit/layer0/head1"] != 42 || !math.IsInf(samples[41].Values["bad"], 1) || !samples[41].Time.Equal(t0.Add(42*time.Second)) {
		t.Fatalf("samples %+v", samples[41])
	}
	if len(alerts) != 1 || alerts[0].Rule != RuleLossSpike || alerts[0].Verdict != VerdictRecoverable || alerts[0].Value != 2 {
		t.Fatalf("alerts %+v", alerts)
	}
}

func TestTraceJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	w, err := NewTraceWriter(path, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for s := int64(1); s <= 4; s++ {
		st := t0.Add(time.Duration(s) * time.Second)
		w.WriteSample(&Sample{Step: s, Time: st.Add(300 * time.Millisecond), Values: map[string]float64{"step_time": 0.3}, Phases: []Phase{
			{"data_wait", st, 50 * time.Millisecond}, {"forward", st.Add(50 * time.Millisecond), 100 * time.Millisecond},
			{"backward", st.Add(150 * time.Millisecond), 100 * time.Millisecond}, {"optimizer", st.Add(250 * time.Millisecond), 50 * time.Millisecond}}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var evs []map[string]any
	if err := json.Unmarshal(b, &evs); err != nil {
		t.Fatalf("trace.json is not a JSON array: %v\n%s", err, b)
	}
	// 2 metadata + 2 steps × (1 step slice + 4 phases)
	if len(evs) != 12 {
		t.Fatalf("%d events", len(evs))
	}
	if evs[2]["name"] != "step 2" || evs[2]["dur"].(float64) != 300000 || evs[4]["name"] != "forward" || evs[4]["ts"].(float64) != 50000 {
		t.Errorf("events %v %v", evs[2], evs[4])
	}
}

func TestPrometheusEndpoint(t *testing.T) {
	p, err := NewPrometheusSink(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("not on loopback: %s", p.Addr())
	}
	p.WriteSample(&Sample{Step: 5, Tokens: 4096, Values: map[string]float64{"train_loss_raw": 2.5, "max_attn_logit/layer1/head0": 9,
		"skipped_updates": 2, "custom/x": 1, "alerts_total": 3}})
	p.WriteEvent(&Event{Kind: EventCheckpoint, OK: true, Values: map[string]float64{"checkpoint_time": 0.5}})
	p.WriteAlert(&Alert{Severity: SEV0, Rule: RuleNaNInf})
	resp, err := http.Get("http://" + p.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	for _, want := range []string{`kestrel_train_loss_raw{variant=""} 2.5`, `kestrel_max_attn_logit{variant="layer1/head0"} 9`,
		`kestrel_step 5`, `kestrel_alerts_total{rule="nan_inf",severity="SEV0"} 1`, "# HELP kestrel_train_loss_raw mean cross-entropy",
		"# TYPE kestrel_train_loss_raw gauge", "# TYPE kestrel_tokens_seen_total counter", `kestrel_tokens_seen_total{variant=""} 4096`,
		"# TYPE kestrel_skipped_updates_total counter", "# TYPE kestrel_checkpoint_ok gauge", `kestrel_custom{variant="x"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	// The exposition parses, and every family's type is the registry's kind.
	tp := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, body)
	}
	byProm := map[string]string{}
	for _, m := range Metrics() {
		byProm[PromName(m.Name)] = m.Name
	}
	for name, f := range fams {
		m, ok := Lookup(byProm[name])
		if !ok {
			continue
		}
		if want := map[Kind]dto.MetricType{Gauge: dto.MetricType_GAUGE, Counter: dto.MetricType_COUNTER}[m.Kind]; f.GetType() != want {
			t.Errorf("%s: type %v, want %v (%s)", name, f.GetType(), want, m.Kind)
		}
		if m.Kind == Counter && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s lacks _total", name)
		}
	}
	if f := fams["kestrel_alerts_total"]; f == nil || len(f.Metric) != 1 {
		t.Errorf("a sample value named alerts_total must not clash with the alert counter: %v", f)
	}
}

// TestSinksReopenKeepData: a resumed run reopens its store and writes a new
// event file without losing what the first run wrote.
func TestSinksReopenKeepData(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.sqlite")
	for run := 0; run < 2; run++ {
		s, err := OpenStore(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(1); i <= 10; i++ {
			s.WriteSample(&Sample{Step: int64(run)*10 + i, Time: t0, Values: map[string]float64{"train_loss_raw": 1}})
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		w, err := NewTFEventsWriter(dir, t0) // same second both times
		if err != nil {
			t.Fatal(err)
		}
		w.WriteSample(&Sample{Step: int64(run), Time: t0, Values: map[string]float64{"x": 1}})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	samples, _, err := ReadStore(path)
	if err != nil || len(samples) != 20 {
		t.Fatalf("%d samples after reopen, %v", len(samples), err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(files) != 2 {
		t.Fatalf("event files %v", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if recs, err := tfevents.ReadRecords(bytes.NewReader(b)); err != nil || len(recs) != 2 {
			t.Errorf("%s: %d records, %v", f, len(recs), err)
		}
	}
}
