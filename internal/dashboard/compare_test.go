package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// writeCompareRun writes a run of 20 steps (tokens 100 per step) whose
// train loss is 3 − 0.05·s + off after step 10 and whose val_loss at
// steps 4, 8, …, 20 is 3.1 − 0.05·s + off after step 10 (plus a small
// alternating jitter), with a config.toml whose optim.lr is lr.
func writeCompareRun(t *testing.T, dir string, off, lr float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for s := 1; s <= 20; s++ {
		d := 0.0
		if s > 10 {
			d = off
		}
		fmt.Fprintf(&b, `{"step":%d,"tokens_seen":%d,"train_loss_raw":%g}`+"\n", s, 100*s, 3-0.05*float64(s)+d+0.001*float64(s%3))
		if s%4 == 0 {
			fmt.Fprintf(&b, `{"step":%d,"tokens_seen":%d,"val_loss":%g}`+"\n", s, 100*s, 3.1-0.05*float64(s)+d+0.002*float64(s%8/4))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(fmt.Sprintf("[optim]\nlr = %g\n", lr)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCompareEndpoint: /api/compare serves internal/compare's report for
// the runs named (a branch alone against its served parent), and refuses
// a lone run that is no branch, a branch whose parent is not served, an
// unknown run, a bad window and a run whose metrics.jsonl leads out of the
// run, naming what is wrong.
func TestCompareEndpoint(t *testing.T) {
	root := t.TempDir()
	parent, canary, orphan := filepath.Join(root, "parent"), filepath.Join(root, "canary"), filepath.Join(root, "orphan")
	writeCompareRun(t, parent, 0, 1e-3)
	writeCompareRun(t, canary, -0.2, 2e-3)
	writeCompareRun(t, orphan, 0.1, 1e-3)
	for dir, par := range map[string]string{canary: parent, orphan: filepath.Join(root, "elsewhere")} {
		if err := os.MkdirAll(par, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := runlog.WriteBranch(dir, &runlog.Parent{Run: par, Step: 10, Steps: 10, UntilStep: 20}); err != nil {
			t.Fatal(err)
		}
	}
	leaky := filepath.Join(root, "leaky") // its metrics.jsonl is a link out of the run
	if err := os.MkdirAll(leaky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(parent, "metrics.jsonl"), filepath.Join(leaky, "metrics.jsonl")); err != nil {
		t.Fatal(err)
	}
	srv, err := New("", []string{parent, canary, orphan, leaky})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	get := func(q string) (int, map[string]any) {
		res, err := http.Get(ts.URL + "/api/compare?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, m
	}
	for _, q := range []string{"runs=canary", "runs=parent,canary"} {
		code, m := get(q)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", q, code, m)
		}
		p := m["pairs"].([]any)[0].(map[string]any)
		if p["a"] != "parent" || p["b"] != "canary" || !strings.HasPrefix(p["verdict"].(string), "canary is better than parent on val by 0.200") {
			t.Errorf("%s: pair %v", q, p)
		}
		if cfg := p["config"].([]any); len(cfg) != 1 || cfg[0].(map[string]any)["field"] != "optim.lr" {
			t.Errorf("%s: config differences %v", q, cfg)
		}
	}
	// Three runs: each after the first against the first.
	if code, m := get("runs=parent,canary,orphan"); code != http.StatusOK || len(m["pairs"].([]any)) != 2 || m["pairs"].([]any)[1].(map[string]any)["b"] != "orphan" {
		t.Errorf("three runs: %d %v", code, m)
	}
	for _, tc := range []struct{ q, want string }{
		{"runs=parent", "no branch"},
		{"runs=orphan", "not a run this dashboard serves"},
		{"runs=parent,nosuch", "nosuch"},
		{"runs=", "name the runs"},
		{"runs=parent,canary&window=0", "window"},
		{"runs=parent,leaky", "metrics.jsonl"},
	} {
		code, m := get(tc.q)
		if code == http.StatusOK || !strings.Contains(fmt.Sprint(m["error"]), tc.want) {
			t.Errorf("%s: %d %v, want an error naming %q", tc.q, code, m, tc.want)
		}
	}
}
