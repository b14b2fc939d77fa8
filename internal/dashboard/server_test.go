package dashboard

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/monitor"
)

func newTestServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	writeRun(t, filepath.Join(runs, "alpha"), 600, 30, 300)
	writeRun(t, filepath.Join(runs, "beta"), 200, 14, 120)
	// A secret next to the runs that no request may reach.
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := New(runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.poll = 20 * time.Millisecond
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, root
}

func get(t *testing.T, url string, wantCode int) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != wantCode {
		t.Fatalf("GET %s: status %d, want %d: %s", url, resp.StatusCode, wantCode, b)
	}
	return b
}

type metricsResp struct {
	Run    string `json:"run"`
	Series map[string]*struct {
		N    int        `json:"n"`
		Down bool       `json:"downsampled"`
		X    []float64  `json:"x"`
		Y    []*float64 `json:"y"`
		Hi   []*float64 `json:"hi"`
	} `json:"series"`
}

func TestAPIRunsAndMetrics(t *testing.T) {
	ts, _ := newTestServer(t)
	var runs []RunSummary
	if err := json.Unmarshal(get(t, ts.URL+"/api/runs", 200), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Name != "alpha" || runs[0].LastStep != 600 || runs[0].Alerts != 1 {
		t.Fatalf("runs: %+v", runs)
	}
	var names []string
	if err := json.Unmarshal(get(t, ts.URL+"/api/names?run=alpha", 200), &names); err != nil {
		t.Fatal(err)
	}
	if !contains(names, "train_loss_raw") || !contains(names, "max_attn_logit/layer0/head1") || contains(names, "step") {
		t.Fatalf("names: %v", names)
	}
	for _, x := range []string{"step", "tokens", "time"} {
		var m metricsResp
		body := get(t, ts.URL+"/api/metrics?run=alpha&names=train_loss_raw,val_loss,missing&max_points=100&x="+x, 200)
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		tl := m.Series["train_loss_raw"]
		if tl == nil || tl.N != 600 || !tl.Down || len(tl.X) > 100 {
			t.Fatalf("x=%s train_loss_raw: %+v", x, tl)
		}
		maxHi := 0.0
		for _, h := range tl.Hi {
			if h != nil && *h > maxHi {
				maxHi = *h
			}
		}
		if maxHi < 5 {
			t.Fatalf("x=%s: the planted spike is not in the envelope (max %v)", x, maxHi)
		}
		if v := m.Series["val_loss"]; v == nil || v.N != 12 || v.Down {
			t.Fatalf("x=%s val_loss: %+v", x, v)
		}
		if _, ok := m.Series["missing"]; !ok || m.Series["missing"] != nil {
			t.Fatalf("unknown metric should be null")
		}
		if x == "tokens" && tl.X[0] != 2048 {
			t.Fatalf("tokens axis starts at %v", tl.X[0])
		}
		if x == "time" && tl.X[0] != 0 {
			t.Fatalf("time axis should start at 0, got %v", tl.X[0])
		}
	}
	get(t, ts.URL+"/api/metrics?run=alpha&x=furlongs", 400)
	get(t, ts.URL+"/api/metrics?run=alpha&max_points=-3", 400)
	get(t, ts.URL+"/api/metrics?run=nope", 404)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestAPIEventsAndRunInfo(t *testing.T) {
	ts, _ := newTestServer(t)
	var evs []Event
	if err := json.Unmarshal(get(t, ts.URL+"/api/events?run=alpha", 200), &evs); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.Kind]++
		if e.Kind == "spike" && (e.Step != 300 || e.Tokens != 300*2048 || e.Runbook == "" || !strings.Contains(e.Detail, "recoverable")) {
			t.Fatalf("spike event: %+v", e)
		}
	}
	if kinds["spike"] != 1 || kinds["skipped"] != 1 || kinds["lr_phase"] != 1 || kinds["clipped"] != 6 {
		t.Fatalf("event kinds: %v", kinds)
	}
	var info RunInfo
	if err := json.Unmarshal(get(t, ts.URL+"/api/run?run=alpha", 200), &info); err != nil {
		t.Fatal(err)
	}
	if info.ConfigFlat["optim.max_grad_norm"] != "1" || !contains(info.Files, "config.toml") || len(info.Alerts) != 1 {
		t.Fatalf("run info: %+v", info)
	}
}

func TestPathTraversalRefused(t *testing.T) {
	ts, root := newTestServer(t)
	// A symlink inside the run's report directory pointing outside it.
	rep := filepath.Join(root, "runs", "alpha", "report")
	if err := os.MkdirAll(rep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(rep, "leak.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rep, "loss.png"), []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	get(t, ts.URL+"/files/alpha/report/loss.png", 200)
	get(t, ts.URL+"/files/alpha/config.toml", 200)
	for _, p := range []string{
		"/files/alpha/../secret.txt",
		"/files/alpha/..%2f..%2fsecret.txt",
		"/files/alpha/%2e%2e/%2e%2e/secret.txt",
		"/files/alpha/report/..%2f..%2f..%2fsecret.txt",
		"/files/alpha/report/leak.png",
		"/files/..%2f..%2f/secret.txt",
		"/files/alpha/metrics.jsonl/../../../secret.txt",
		"/files/alpha//etc/passwd",
		"/files/alpha/report/",
		"/api/metrics?run=../secret.txt",
		"/api/run?run=..%2F..",
		"/../../secret.txt",
		"/%2e%2e/secret.txt",
		"/vendor/../../secret.txt",
	} {
		resp, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(b), "top secret") {
			t.Fatalf("%s leaked the secret", p)
		}
		if strings.Contains(string(b), "top secret") {
			t.Fatalf("%s leaked the secret with status %d", p, resp.StatusCode)
		}
	}
}

func TestLiveAppendAndPartialLines(t *testing.T) {
	ts, root := newTestServer(t)
	path := filepath.Join(root, "runs", "beta", "metrics.jsonl")
	resp, err := http.Get(ts.URL + "/api/stream?run=beta")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := func() string {
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "data:") {
				return l
			}
		}
		t.Fatal("stream ended")
		return ""
	}
	if l := next(); !strings.Contains(l, `"rows":204`) {
		t.Fatalf("first stream event %q", l)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Half a line (a writer mid-append) must not be read yet; a bad line is
	// counted and named, the run keeps loading.
	if _, err := f.WriteString("not json\n" + `{"step":201,"train_loss_raw":2.5`); err != nil {
		t.Fatal(err)
	}
	var info RunInfo
	if err := json.Unmarshal(get(t, ts.URL+"/api/run?run=beta", 200), &info); err != nil {
		t.Fatal(err)
	}
	if info.Rows != 204 {
		t.Fatalf("a half-written line was read: %d rows", info.Rows)
	}
	if _, err := f.WriteString("}\n"); err != nil {
		t.Fatal(err)
	}
	for l := next(); !strings.Contains(l, `"rows":205`); l = next() {
	}
	if err := json.Unmarshal(get(t, ts.URL+"/api/run?run=beta", 200), &info); err != nil {
		t.Fatal(err)
	}
	if info.BadLines != 1 || !strings.Contains(info.FirstBad, "metrics.jsonl:205") {
		t.Fatalf("bad line not reported with its number: %d %q", info.BadLines, info.FirstBad)
	}
}

// TestPanelsFromRegistry: /api/panels serves the registry's layout, and
// every name the test run recorded that the registry charts lands in a
// panel.
func TestPanelsFromRegistry(t *testing.T) {
	ts, _ := newTestServer(t)
	var groups []struct {
		Title  string `json:"title"`
		Small  bool   `json:"small"`
		Panels []struct {
			ID, Title, Threshold string
			Match                []string `json:"match"`
			Split                string   `json:"split"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(get(t, ts.URL+"/api/panels", 200), &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) == 0 || groups[0].Title != "1 · Held-out loss" {
		t.Fatalf("groups %+v", groups)
	}
	drawn := func(name string) []string {
		var ids []string
		for _, g := range groups {
			for _, p := range g.Panels {
				for _, e := range p.Match {
					if regexp.MustCompile(e).MatchString(name) {
						ids = append(ids, p.ID)
						break
					}
				}
			}
		}
		return ids
	}
	for name, want := range map[string]string{"val_loss": "val", "slice_val_loss/web": "val", "train_loss_raw": "train",
		"lr": "lr", "max_attn_logit/layer2/head0": "maxlogitL", "source_mix_share/code": "mix", "data_wait_s": "steptime"} {
		if got := drawn(name); len(got) != 1 || got[0] != want {
			t.Errorf("%s drawn in %v, want [%s]", name, got, want)
		}
	}
	for _, g := range groups {
		for _, p := range g.Panels {
			if p.ID == "grad" && p.Threshold != "optim.max_grad_norm" {
				t.Errorf("grad threshold %q", p.Threshold)
			}
			if p.ID == "maxlogitL" {
				if m := regexp.MustCompile(p.Split).FindStringSubmatch("max_attn_logit/layer3/head1"); len(m) != 2 || m[1] != "3" {
					t.Errorf("split %q: %v", p.Split, m)
				}
			}
		}
	}
	var names []string
	if err := json.Unmarshal(get(t, ts.URL+"/api/names?run=alpha", 200), &names); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		m, ok := monitor.Lookup(n)
		charted := m.Panel != ""
		if n != m.Name {
			charted = m.VariantPanel != ""
		}
		if ok && charted && len(drawn(n)) == 0 {
			t.Errorf("recorded %s is charted by the registry but in no panel", n)
		}
	}
}
