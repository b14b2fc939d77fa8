package monitor

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestPromNames pins the naming rules on representative registry names.
func TestPromNames(t *testing.T) {
	for _, c := range []struct{ base, want string }{
		{"train_loss_raw", "kestrel_train_loss_raw"},
		{"tokens_seen", "kestrel_tokens_seen_total"},
		{"step_time", "kestrel_step_time_seconds"},
		{"checkpoint_size", "kestrel_checkpoint_size_bytes"},
		{"bytes_per_token", "kestrel_bytes_per_token"},
		{"tokens_per_sec", "kestrel_tokens_per_second"},
		{"adam_m_norm", "kestrel_adam_exp_avg_norm"},
		{"last_step_unix_time", "kestrel_last_step_time_seconds"},
		{"seconds_since_step", "kestrel_seconds_since_step"},
		{"not-in-registry", "kestrel_not_in_registry"},
	} {
		if got := PromName(c.base); got != c.want {
			t.Errorf("PromName(%q) = %q, want %q", c.base, got, c.want)
		}
	}
	seen := map[string]string{}
	for _, m := range Metrics() {
		n := PromName(m.Name)
		if o, dup := seen[n]; dup {
			t.Errorf("%s and %s both serve as %s", o, m.Name, n)
		}
		seen[n] = m.Name
	}
}

// scrapeAll serves one value for every registry name (and a variant of
// each that has variants), plus an alert and a name outside the registry,
// and returns the /metrics body.
func scrapeAll(t *testing.T) []byte {
	t.Helper()
	p, err := NewPrometheusSink(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	vals := map[string]float64{"custom_thing/x": 1}
	for i, m := range Metrics() {
		vals[m.Name] = float64(i)
		if len(m.Variants) > 0 {
			vals[m.Name+"/layer0"] = float64(i)
		}
	}
	p.WriteSample(&Sample{Step: 7, Tokens: 100, Time: time.Unix(1700000000, 0), Values: vals})
	p.WriteEvent(&Event{Kind: EventCheckpoint, OK: true})
	p.WriteAlert(&Alert{Severity: SEV1, Rule: RuleStalled})
	resp, err := http.Get("http://" + p.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return body
}

// TestPrometheusLint: the exposition with every registry name passes
// client_golang's promlint (the checks of `promtool check metrics`), and
// promtool itself where it is installed.
func TestPrometheusLint(t *testing.T) {
	body := scrapeAll(t)
	for _, want := range []string{"# TYPE kestrel_step_time_seconds gauge", "# TYPE kestrel_tokens_seen_total counter",
		"# TYPE kestrel_custom_thing untyped", "kestrel_last_step_time_seconds 1.7e+09", "# HELP kestrel_seconds_since_step "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: promlint only")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	t.Logf("promtool check metrics: ok (%d bytes, %d families)", len(body), strings.Count(string(body), "# TYPE"))
}
