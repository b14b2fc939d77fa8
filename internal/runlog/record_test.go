package runlog

import (
	"database/sql"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStepLineRoundTrip(t *testing.T) {
	thr := 0.25
	s := &Step{Step: 7, TokensSeen: 7168, WallTime: 12.5, UnixTime: 1.7e9, TrainLossRaw: 3.25, LRPhase: "warmup",
		LearningRate: 1e-7, BatchSize: 4, GradClipped: true, UpdateClipThreshold: &thr, SkipReason: "loss",
		PerLayer:       map[string]float64{"max_attn_logit/layer0/head1": math.NaN(), "residual_rms/layer1": math.Inf(1)},
		SourceMixShare: map[string]float64{"web": 0.75, "books": 0.25}}
	line := AppendLine(nil, s)
	if !strings.HasSuffix(string(line), "}\n") || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("not one line: %q", line)
	}
	for _, want := range []string{`"step":7,`, `"learning_rate":1e-07`, `"lr_phase":"warmup"`, `"grad_clipped":true`,
		`"max_attn_logit/layer0/head1":"NaN"`, `"residual_rms/layer1":"Infinity"`, `"source_mix_share/books":0.25`, `"skip_reason":"loss"`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("line lacks %s: %s", want, line)
		}
	}
	rec := NewRecord()
	if err := ParseLine(line[:len(line)-1], rec); err != nil {
		t.Fatal(err)
	}
	vals := Values(s, nil)
	n := 0
	rec.Each(func(name string, v float64) {
		n++
		if axes[name] {
			if _, ok := vals[name]; ok {
				t.Errorf("axis %s is a value", name)
			}
			return
		}
		w, ok := vals[name]
		if !ok || !(w == v || math.IsNaN(w) && math.IsNaN(v)) {
			t.Errorf("%s: line %v, Values %v (%v)", name, v, w, ok)
		}
	})
	if n != len(vals)+len(axes) {
		t.Errorf("line has %d numbers, Values %d (+%d axes)", n, len(vals), len(axes))
	}
	if vals["tokens_seen"] != 7168 || vals["grad_clipped"] != 1 || vals["skipped"] != 0 || vals["update_clip_threshold"] != 0.25 {
		t.Errorf("values %v", vals)
	}
	s.UpdateClipThreshold = nil
	if _, ok := Values(s, nil)["update_clip_threshold"]; ok || strings.Contains(string(AppendLine(nil, s)), "update_clip_threshold") {
		t.Error("inactive update clipping recorded a threshold")
	}
}

func TestEvalAndCheckpointLines(t *testing.T) {
	e := &Eval{Step: 10, ValLoss: 2.5, ValLossEMA: math.NaN(), TrainValGap: 0.1, ValTokens: 512, FixedProbeLoss: 2.4,
		LogitEntropyProbe: math.NaN(), TopKMassProbe: math.NaN(), SliceValLoss: map[string]float64{"web": 2.6}}
	v := Values(e, nil)
	if _, ok := v["val_loss_ema"]; ok {
		t.Error("val_loss_ema recorded without EMA")
	}
	if _, ok := v["ema_gap"]; ok {
		t.Error("ema_gap recorded without EMA")
	}
	if v["fixed_probe_loss"] != 2.4 || v["slice_val_loss/web"] != 2.6 || v["val_tokens"] != 512 {
		t.Errorf("eval values %v", v)
	}
	e.ValLossEMA = 2.0
	if v := Values(e, nil); v["ema_gap"] != 0.5 {
		t.Errorf("ema_gap %v", v["ema_gap"])
	}
	c := &Checkpoint{Step: 20, Kind: "rolling", Seconds: 0.5, Bytes: 1 << 20, OutputKLToPrev: math.NaN()}
	line := string(AppendLine(nil, c))
	if !strings.Contains(line, `"event":"checkpoint"`) || strings.Contains(line, "output_kl_to_prev") || !strings.Contains(line, `"checkpoint_size":1048576`) {
		t.Errorf("checkpoint line %s", line)
	}
}

func TestAppendFloatEncoding(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0"}, {1.5, "1.5"}, {1e-7, "1e-07"}, {123456789, "123456789"}, {1e21, "1e+21"}, {-2.5e-9, "-2.5e-09"},
		{math.NaN(), `"NaN"`}, {math.Inf(1), `"Infinity"`}, {math.Inf(-1), `"-Infinity"`}} {
		if got := string(AppendFloat(nil, c.v)); got != c.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", c.v, got, c.want)
		}
		rec := NewRecord()
		if err := ParseLine([]byte(`{"x":`+string(AppendFloat(nil, c.v))+`}`), rec); err != nil {
			t.Fatal(err)
		}
		if got, _ := rec.Num("x"); !(got == c.v || math.IsNaN(got) && math.IsNaN(c.v)) {
			t.Errorf("read back %v as %v", c.v, got)
		}
	}
}

func TestTruncateMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	var b []byte
	for s := 1; s <= 5; s++ {
		b = AppendLine(b, &Step{Step: s})
	}
	b = append(b, "not json\n"...)
	b = append(b, `{"step":6,"train_loss_raw":`...) // torn by a crash
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dropped, err := TruncateMetrics(path, 3)
	if err != nil || dropped != 3 {
		t.Fatalf("dropped %d, %v; want 3 (steps 4, 5 and the torn line)", dropped, err)
	}
	log, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if log.Rows != 3 || log.BadLines != 1 || log.Step[2] != 3 {
		t.Errorf("rows %d bad %d steps %v", log.Rows, log.BadLines, log.Step)
	}
	if n, err := TruncateMetrics(filepath.Join(t.TempDir(), "none"), 1); n != 0 || err != nil {
		t.Errorf("missing file: %d %v", n, err)
	}
}

func TestAlertsRoundTripAndErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "alerts.jsonl")
	at := time.Date(2026, 11, 23, 12, 0, 0, 5, time.UTC)
	in := []Alert{
		{Time: at, Step: 3, Tokens: 96, Severity: SEV1, Rule: "loss_spike", Metric: "train_loss_raw", Value: math.Inf(1), Threshold: 4, Message: "m", Action: SEV1.Action(), Runbook: "rb"},
		{Time: at, Step: 4, Severity: SEV0, Rule: "nan_inf", Value: math.NaN(), Threshold: 0, Message: "nan", Action: "pause", Verdict: "optimizer", Evidence: "incidents/x"},
	}
	var b []byte
	for i := range in {
		b = AppendAlert(b, &in[i])
	}
	if err := os.WriteFile(path, append(b, `{"time":"`...), 0o644); err != nil { // a line being written
		t.Fatal(err)
	}
	got, next, err := ReadAlertsFrom(path, 0)
	if err != nil || len(got) != 2 || next != int64(len(b)) {
		t.Fatalf("read %d alerts to %d (want %d): %v", len(got), next, len(b), err)
	}
	if !got[0].Time.Equal(at) || !math.IsInf(got[0].Value, 1) || !math.IsNaN(got[1].Value) || got[1].Verdict != "optimizer" || got[1].Evidence != "incidents/x" || got[0].Metric != "train_loss_raw" {
		t.Errorf("round trip: %+v", got)
	}
	if more, n2, err := ReadAlertsFrom(path, next); err != nil || len(more) != 0 || n2 != next {
		t.Errorf("incremental read: %v %d %v", more, n2, err)
	}
	// A replaced (shorter) file is read from the start.
	if err := os.WriteFile(path, b[:len(AppendAlert(nil, &in[0]))], 0o644); err != nil {
		t.Fatal(err)
	}
	if again, n3, err := ReadAlertsFrom(path, next); err != nil || len(again) != 1 || n3 >= next {
		t.Errorf("replaced file: %d alerts to %d, %v", len(again), n3, err)
	}
	for _, bad := range []struct{ line, want string }{
		{`{"step":1,"severity":"SEV9","rule":"x"}`, "alerts.jsonl:2: field severity"},
		{`{"step":1,"severity":"SEV1"}`, "alerts.jsonl:2: field rule"},
		{`{"step":1,`, "alerts.jsonl:2: offset"},
		{`{"time":"yesterday","severity":"SEV1","rule":"x"}`, "alerts.jsonl:2: field time"},
	} {
		if err := os.WriteFile(path, append(AppendAlert(nil, &in[0]), bad.line+"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadAlerts(path); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.line, err, bad.want)
		}
	}
	if as, err := ReadAlerts(filepath.Join(dir, "none.jsonl")); err != nil || len(as) != 0 {
		t.Errorf("missing file: %v %v", as, err)
	}
}

func TestManifestRoundTripAndDiff(t *testing.T) {
	dir := t.TempDir()
	a := &Manifest{GitSHA: "abc", GoVersion: "go1.26", ModulesHash: "m1", OSArch: "linux/amd64", CPU: "cpu A", NumCPU: 2,
		Kernel: "avx512", ConfigHash: "c1", DatasetHash: "d1", TokenizerHash: "t1", ProbeHash: "p1",
		EvalHashes: map[string]string{"decontam/gsm8k": "g1"}, Data: &DataInfo{Kind: "dataset", Path: "datasets/x"},
		Starts: []Start{{Time: "2026-11-23T00:00:00Z", Step: 0, ConfigHash: "c1"}}}
	if err := WriteManifest(dir, a); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := a.Diff(back); len(d) != 0 || back.Data.Path != "datasets/x" || len(back.Starts) != 1 {
		t.Fatalf("round trip: %v %+v", d, back)
	}
	b := *back
	b.CPU, b.NumCPU, b.PeakGFLOPS = "cpu B", 64, 300 // a bigger machine: not a mismatch
	if d := a.Diff(&b); len(d) != 0 {
		t.Errorf("machine size differs: %v", d)
	}
	b.DatasetHash = "d2"
	b.EvalHashes = map[string]string{"decontam/gsm8k": "g1", "decontam/piqa": "q1"}
	d := a.Diff(&b)
	if len(d) != 1 || d[0] != "dataset_hash: d1 → d2" {
		t.Errorf("diff %v", d)
	}
	// A field the old manifest did not record is not a mismatch; one it did
	// record and the new one lacks is.
	old := &Manifest{ConfigHash: "c1", EvalHashes: map[string]string{"decontam/gsm8k": "g1"}}
	cur := &Manifest{ConfigHash: "c1", DatasetHash: "d1"}
	if d := old.Diff(cur); len(d) != 1 || !strings.HasPrefix(d[0], "eval_hashes.decontam/gsm8k: g1 → (none)") {
		t.Errorf("diff %v", d)
	}
	// A quarantine overlay added (none → its hash) is named like any input.
	old = &Manifest{QuarantineHash: "none"}
	cur = &Manifest{QuarantineHash: "0123456789abcdef0123"}
	if d := old.Diff(cur); len(d) != 1 || d[0] != "quarantine_hash: none → 0123456789abcdef" {
		t.Errorf("diff %v", d)
	}
	if _, err := ReadManifest(t.TempDir()); err == nil {
		t.Error("missing manifest read")
	}
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte("{"), 0o644)
	if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ManifestFile)) {
		t.Errorf("corrupt manifest: %v", err)
	}
}

func TestStoreEvalsInMetricsViewAndRunTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.sqlite")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0)
	s.SetRunInfo("name", "demo")
	s.WriteValues(1, 100, at, map[string]float64{"train_loss_raw": 3, "max_attn_logit": math.NaN()})
	s.WriteEvent(&Event{Kind: EventEval, Step: 1, Tokens: 100, Time: at, OK: true, Values: map[string]float64{"val_loss": 2.5}})
	s.WriteAlert(&Alert{Time: at, Step: 1, Severity: SEV2, Rule: "r", Value: math.NaN(), Threshold: 1, Message: "m"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v float64
	if err := db.QueryRow("SELECT value FROM metrics WHERE name = 'val_loss' AND step = 1").Scan(&v); err != nil || v != 2.5 {
		t.Errorf("val_loss in the metrics view: %v %v", v, err)
	}
	var name string
	if err := db.QueryRow("SELECT value FROM run WHERE key = 'name'").Scan(&name); err != nil || name != "demo" {
		t.Errorf("run table: %q %v", name, err)
	}
	rows, alerts, err := ReadStore(path)
	if err != nil || len(rows) != 1 || rows[0].Values["val_loss"] != 2.5 || !math.IsNaN(rows[0].Values["max_attn_logit"]) {
		t.Fatalf("ReadStore: %+v %v", rows, err)
	}
	if len(alerts) != 1 || !math.IsNaN(alerts[0].Value) || alerts[0].Threshold != 1 || !alerts[0].Time.Equal(at) {
		t.Errorf("alerts %+v", alerts)
	}
	log, err := Load(path)
	if err != nil || log.Rows != 2 || log.Step[0] != 1 || log.Tokens[0] != 100 {
		t.Fatalf("log of the store: %v rows %d", err, log.Rows)
	}
	if got, _, ok := log.Last("val_loss"); !ok || got != 2.5 {
		t.Errorf("val_loss from the store: %v", got)
	}
}
