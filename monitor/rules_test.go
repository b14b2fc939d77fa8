package monitor

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/metrics.md and docs/runbooks.md")

func TestDocsUpToDate(t *testing.T) {
	for _, d := range []struct {
		file  string
		write func(w *bytes.Buffer) error
	}{
		{"../docs/metrics.md", func(w *bytes.Buffer) error { return WriteMetricsDoc(w) }},
		{"../docs/runbooks.md", func(w *bytes.Buffer) error { return WriteRunbooksDoc(w) }},
	} {
		var b bytes.Buffer
		if err := d.write(&b); err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(d.file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(d.file)
		if err != nil {
			t.Fatalf("%v (run: go generate ./monitor)", err)
		}
		if !bytes.Equal(got, b.Bytes()) {
			t.Errorf("%s is stale: run `go generate ./monitor`", d.file)
		}
	}
}

func TestRegistryHasNanoMustHaves(t *testing.T) {
	// The per-step list of issue 8 and seed 004's nano checklist.
	must := []string{"tokens_seen", "steps_seen", "train_loss_raw", "train_loss_ema", "train_ppl", "learning_rate", "lr_phase",
		"tokens_per_update", "grad_global_norm", "grad_clip_rate", "update_norm", "update_to_weight", "skipped_updates",
		"nan_inf_events", "max_attn_logit", "attn_entropy", "residual_rms", "activation_outlier_rate", "tokens_per_sec",
		"step_time", "data_wait_time", "forward_time", "backward_time", "optimizer_time", "checkpoint_time", "eval_time",
		"mfu", "dataloader_stall_frac", "source_mix_share", "pad_fraction", "loss_scale", "overflow_rate", "near_dup_rate",
		"train_val_overlap", "val_loss", "slice_val_loss", "fixed_probe_loss", "logit_entropy_probe", "topk_mass_probe",
		"output_kl_to_prev", "train_val_gap", "ema_gap", "token_kl_drift", "bytes_per_token", "checkpoint_ok"}
	for _, n := range must {
		m, ok := Lookup(n)
		if !ok {
			t.Errorf("registry lacks %s", n)
			continue
		}
		if m.Unit == "" || m.Help == "" || m.Kind == "" {
			t.Errorf("%s: missing unit, help or kind", n)
		}
	}
	if m, ok := Lookup("max_attn_logit/layer3/head1"); !ok || m.Name != "max_attn_logit" {
		t.Errorf("per-layer/head lookup failed: %+v", m)
	}
	seen := map[string]bool{}
	for _, m := range Metrics() {
		if seen[m.Name] {
			t.Errorf("duplicate metric %s", m.Name)
		}
		seen[m.Name] = true
	}
	for _, r := range Runbooks() {
		if r.Meaning == "" || r.Capture == "" || r.Contain == "" || r.Verify == "" {
			t.Errorf("runbook %s incomplete", r.Rule)
		}
	}
}

func TestHealthyRunIsQuiet(t *testing.T) {
	m := newTestMonitor(t, testConfig(), t.TempDir())
	c := newCurve(1)
	for s := int64(1); s <= 400; s++ {
		if as := m.Observe(c.sample(s)); len(as) > 0 {
			t.Fatalf("step %d: unexpected alerts %+v", s, as)
		}
	}
	if p, _ := m.Paused(); p {
		t.Fatal("healthy run paused")
	}
}

func TestRules(t *testing.T) {
	cases := []struct {
		name   string
		rule   string
		sev    Severity
		from   int64
		mutate func(s int64, smp *Sample)
		cfg    func(c *Config)
	}{
		{"nan in nan_inf_events", RuleNaNInf, SEV0, 150, func(s int64, smp *Sample) { smp.Values["nan_inf_events"] = 1 }, nil},
		{"non-finite loss", RuleNaNInf, SEV0, 150, func(s int64, smp *Sample) { smp.Values["train_loss_raw"] = nan() }, nil},
		{"checkpoint_ok false", RuleCheckpointFailed, SEV0, 150, func(s int64, smp *Sample) { smp.Values["checkpoint_ok"] = 0 }, nil},
		{"skip storm (per-step flag)", RuleSkipStorm, SEV0, 150, func(s int64, smp *Sample) { smp.Values["skipped"] = 1 }, nil},
		{"skip storm (cumulative counter)", RuleSkipStorm, SEV0, 150, func(s int64, smp *Sample) { smp.Values["skipped_updates"] = float64(s - 149) }, nil},
		{"attn logit runaway", RuleAttnLogitRunaway, SEV1, 150, func(s int64, smp *Sample) {
			delete(smp.Values, "max_attn_logit")
			smp.Values["max_attn_logit/layer2/head3"] = 1500
			smp.Values["max_attn_logit/layer0/head0"] = 30
		}, nil},
		{"attn logit above cap", RuleAttnLogitCap, SEV2, 150, func(s int64, smp *Sample) { smp.Values["max_attn_logit"] = 150 }, nil},
		{"entropy collapse absolute", RuleEntropyCollapse, SEV1, 150, func(s int64, smp *Sample) { smp.Values["attn_entropy"] = 0.01 }, nil},
		{"entropy collapse relative", RuleEntropyCollapse, SEV1, 150, func(s int64, smp *Sample) { smp.Values["attn_entropy"] = 0.15 }, nil},
		{"throughput drop", RuleThroughputDrop, SEV1, 150, func(s int64, smp *Sample) { smp.Values["tokens_per_sec"] = 7000 }, nil},
		{"mfu drop", RuleThroughputDrop, SEV1, 150, func(s int64, smp *Sample) { smp.Values["mfu"] = 0.2 }, nil},
		{"clip rate rising", RuleClipRate, SEV1, 150, func(s int64, smp *Sample) {
			if s%4 != 0 {
				smp.Values["grad_clipped"] = 1
			}
		}, nil},
		{"mixture drift", RuleMixDrift, SEV2, 1, func(s int64, smp *Sample) {
			share := 0.7
			if s >= 150 {
				share = 0.5
			}
			smp.Values["source_mix_share/web"] = share
			smp.Values["source_mix_share/code"] = 1 - share
		}, func(c *Config) { c.MixTargets = map[string]float64{"web": 0.7, "code": 0.3} }},
		{"stall fraction", RuleStall, SEV2, 150, func(s int64, smp *Sample) { smp.Values["dataloader_stall_frac"] = 0.2 }, nil},
		{"val regression", RuleValRegression, SEV2, 1, func(s int64, smp *Sample) {
			if s%25 == 0 {
				v := 3.5 - float64(s)/1000
				if s >= 150 {
					v = 3.5 + float64(s)/1000
				}
				smp.Values["val_loss"] = v
			}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			cfg.PauseOnSEV0 = true
			m := newTestMonitor(t, cfg, t.TempDir())
			c := newCurve(2)
			var got []Alert
			for s := int64(1); s <= 260; s++ {
				smp := c.sample(s)
				if s >= tc.from {
					tc.mutate(s, &smp)
				}
				for _, a := range m.Observe(smp) {
					if s < 150 && tc.from >= 150 {
						t.Fatalf("step %d: alert before the fault: %+v", s, a)
					}
					got = append(got, a)
				}
			}
			a, ok := rulesFired(got)[tc.rule]
			if !ok {
				t.Fatalf("rule %s did not fire; got %+v", tc.rule, got)
			}
			if a.Severity != tc.sev {
				t.Errorf("severity %s, want %s", a.Severity, tc.sev)
			}
			if !strings.Contains(a.Runbook, "Contain:") || a.Message == "" {
				t.Errorf("alert lacks runbook/message: %+v", a)
			}
			paused, _ := m.Paused()
			if paused != (tc.sev == SEV0) {
				t.Errorf("paused = %v for %s", paused, tc.sev)
			}
			if tc.rule == RuleAttnLogitRunaway && !strings.Contains(a.Message, "layer2/head3") {
				t.Errorf("runaway alert does not name the head: %s", a.Message)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

func TestSEV0WritesIncidentBundle(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[run]\nname = \"x\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"git_sha":"abc"}`), 0o644)
	cfg := testConfig()
	cfg.IncidentSteps = 10
	m := newTestMonitor(t, cfg, dir)
	c := newCurve(3)
	var sev0 *Alert
	for s := int64(1); s <= 50; s++ {
		smp := c.sample(s)
		smp.Batch = &Batch{IDs: []string{"b" + itoa(s)}, Sources: []string{"web", "code"}, DocIDs: []string{"doc" + itoa(s)}}
		if s == 50 {
			smp.Values["nan_inf_events"] = 1
			smp.Values["train_loss_raw"] = nan()
		}
		for _, a := range m.Observe(smp) {
			if a.Severity == SEV0 {
				a := a
				sev0 = &a
			}
		}
	}
	if sev0 == nil || sev0.Evidence == "" {
		t.Fatalf("no SEV0 with evidence: %+v", sev0)
	}
	inc := filepath.Join(dir, sev0.Evidence)
	for _, f := range []string{"alert.json", "RUNBOOK.md", "metrics.jsonl", "batches.jsonl", "config.toml", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(inc, f)); err != nil {
			t.Errorf("bundle lacks %s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(inc, "metrics.jsonl"))
	if n := strings.Count(string(b), "\n"); n != 10 {
		t.Errorf("metrics.jsonl has %d lines, want 10", n)
	}
	if !strings.Contains(string(b), `"train_loss_raw":"NaN"`) {
		t.Errorf("the NaN step is missing from the bundle")
	}
	bb, _ := os.ReadFile(filepath.Join(inc, "batches.jsonl"))
	if !strings.Contains(string(bb), "doc50") || !strings.Contains(string(bb), "doc41") {
		t.Errorf("batches.jsonl lacks the last batch ids: %s", bb)
	}
	if !strings.HasPrefix(filepath.Base(inc), "20261121T") || !strings.HasSuffix(inc, "-nan_inf") {
		t.Errorf("incident dir name %s", inc)
	}
	if p, why := m.Paused(); !p || !strings.Contains(why, "nan_inf") {
		t.Errorf("not paused: %v %q", p, why)
	}
	// alerts.jsonl carries the alert in the dashboard's field names.
	m.Close()
	ab, _ := os.ReadFile(filepath.Join(dir, "alerts.jsonl"))
	var rec map[string]any
	if err := json.Unmarshal(bytes.SplitN(ab, []byte("\n"), 2)[0], &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"step", "severity", "rule", "message", "runbook", "evidence"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("alerts.jsonl lacks %q: %s", k, ab)
		}
	}
}

func itoa(i int64) string { b, _ := json.Marshal(i); return string(b) }

func TestCheckpointFailureEvent(t *testing.T) {
	m := newTestMonitor(t, testConfig(), t.TempDir())
	as := m.Record(Event{Kind: EventCheckpoint, Step: 100, OK: false, Path: "checkpoints/step-00000100", Detail: "no space left on device"})
	if len(as) != 1 || as[0].Rule != RuleCheckpointFailed || as[0].Severity != SEV0 || as[0].Evidence == "" {
		t.Fatalf("got %+v", as)
	}
	if as := m.Record(Event{Kind: EventCheckpoint, Step: 200, OK: true}); len(as) != 0 {
		t.Fatalf("ok checkpoint alerted: %+v", as)
	}
}

func TestWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []Alert
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a Alert
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("content type %q", r.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			t.Error(err)
		}
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
	}))
	defer srv.Close()
	cfg := testConfig()
	cfg.Webhook = srv.URL
	m, err := New(cfg, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	m.Record(Event{Kind: EventCheckpoint, Step: 7, OK: false})
	m.Close()
	if len(got) != 1 || got[0].Rule != RuleCheckpointFailed || got[0].Step != 7 {
		t.Fatalf("webhook got %+v", got)
	}
}

func TestManifestMismatchAlert(t *testing.T) {
	m := newTestMonitor(t, testConfig(), t.TempDir())
	if as := m.ManifestMismatch(10, nil); len(as) != 0 {
		t.Fatalf("no differences fired %+v", as)
	}
	as := m.ManifestMismatch(10, []string{"dataset_hash: aaaa → bbbb"})
	if len(as) != 1 || as[0].Rule != RuleManifest || as[0].Severity != SEV1 || !strings.Contains(as[0].Message, "dataset_hash: aaaa → bbbb") {
		t.Fatalf("got %+v", as)
	}
}

func TestDerivedVitals(t *testing.T) {
	m := newTestMonitor(t, testConfig(), "")
	smp := Sample{Step: 1, Values: map[string]float64{"train_loss_raw": 2, "data_wait_time": 0.1, "step_time": 0.5,
		"attn_entropy/layer0/head0": 1.5, "attn_entropy/layer1/head0": 0.9, "max_attn_logit/layer1/head1": 12}}
	m.Observe(smp)
	v := smp.Values
	if v["train_loss_ema"] != 2 || v["train_ppl"] != 7.38905609893065 || v["dataloader_stall_frac"] != 0.2 ||
		v["attn_entropy"] != 0.9 || v["max_attn_logit"] != 12 {
		t.Fatalf("derived %+v", v)
	}
	ev := Event{Kind: EventEval, Step: 1, Values: map[string]float64{"val_loss": 2.5}}
	m.Record(ev)
	if ev.Values["train_val_gap"] != 0.5 {
		t.Fatalf("train_val_gap %v", ev.Values["train_val_gap"])
	}
	if kl := KL([]float64{1, 1}, []float64{1, 1}); kl > 1e-9 {
		t.Errorf("KL of equal histograms %g", kl)
	}
	if kl := KL([]float64{1, 0}, []float64{1, 1}); kl < 0.69 || kl > 0.7 {
		t.Errorf("KL([1,0]||[.5,.5]) = %g, want ln 2", kl)
	}
}

func TestUseAfterClose(t *testing.T) {
	cfg := testConfig()
	cfg.SQLite = true
	m, err := New(cfg, Options{RunDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if as := m.Observe(Sample{Step: 1, Values: map[string]float64{"nan_inf_events": 1}}); as != nil {
		t.Errorf("observe after close: %+v", as)
	}
	m.Record(Event{Kind: EventCheckpoint, OK: false})
	m.ManifestMismatch(1, []string{"x"})
	if err := m.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestThroughputDropPagesOnce: tokens_per_sec and mfu falling together (as
// they do: mfu is proportional to throughput) raise one incident, not two.
func TestThroughputDropPagesOnce(t *testing.T) {
	m := newTestMonitor(t, testConfig(), t.TempDir())
	c := newCurve(4)
	n := 0
	for s := int64(1); s <= 260; s++ {
		smp := c.sample(s)
		if s >= 150 {
			smp.Values["tokens_per_sec"] = 7000
			smp.Values["mfu"] = 0.2
		}
		for _, a := range m.Observe(smp) {
			if a.Rule == RuleThroughputDrop {
				n++
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d throughput_drop alerts for one slowdown, want 1", n)
	}
}
