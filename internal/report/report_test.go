package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
)

func writeMetrics(t *testing.T, dir string, steps int, nanAt int) {
	t.Helper()
	var b strings.Builder
	for s := 1; s <= steps; s++ {
		loss := 5.5 * math.Pow(float64(s), -0.15)
		nan := 0
		if s == nanAt {
			nan = 1
		}
		fmt.Fprintf(&b, `{"step":%d,"tokens_seen":%d,"wall_time":%g,"train_loss_raw":%g,"train_loss_ema":%g,"learning_rate":%g,"grad_global_norm":%g,"update_norm":%g,"tokens_per_sec":3000,"mfu":0.2,"skipped":false,"nan_inf_events":%d,"max_attn_logit":%g,"attn_entropy":2.1,"max_attn_logit/layer0":%g,"source_mix_share/web":0.6,"source_mix_share/books":0.4}`+"\n",
			s, s*4096, 0.5*float64(s), loss, loss, 1e-3, 0.8, 0.3, nan, 5+float64(s)/100, 4+float64(s)/100)
		if s%25 == 0 {
			fmt.Fprintf(&b, `{"step":%d,"tokens_seen":%d,"val_loss":%g,"val_loss_ema":%g,"slice_val_loss/web":%g}`+"\n", s, s*4096, loss+0.05, loss+0.03, loss+0.1)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWriteHealthyRun(t *testing.T) {
	dir := t.TempDir()
	writeMetrics(t, dir, 300, 0)
	alerts := `{"step":120,"severity":"SEV2","rule":"stall_fraction","message":"stall 12% | over 10%"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "alerts.jsonl"), []byte(alerts), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"git_sha":"abc","config_hash":"123"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Write(Input{RunDir: dir, UnigramLoss: 5.0, Samples: []Sample{{Prompt: "ROMEO:", Temperature: 0.8, TopK: 40, Text: " what light"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Healthy {
		t.Fatalf("healthy run judged unhealthy: %v", sum.Verdicts)
	}
	if sum.Steps != 300 || sum.Tokens != 300*4096 || math.Abs(sum.FinalVal-(5.5*math.Pow(300, -0.15)+0.05)) > 1e-4 {
		t.Fatalf("summary: steps %v tokens %v val %v", sum.Steps, sum.Tokens, sum.FinalVal)
	}
	for _, p := range []string{"loss.png", "norms.png", "lr.png", "throughput.png", "mix.png", "attention.png"} {
		b, err := os.ReadFile(filepath.Join(dir, "report", p))
		if err != nil {
			t.Fatalf("plot %s: %v", p, err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() < 300 {
			t.Fatalf("plot %s is not a usable PNG: %v", p, err)
		}
	}
	md, err := os.ReadFile(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Verdict: **healthy**", "below the unigram baseline 5.000", "![loss](loss.png)", "stall 12% \\| over 10%", "ROMEO: what light", `"git_sha": "abc"`, "| web |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestWriteFlagsProblems(t *testing.T) {
	dir := t.TempDir()
	writeMetrics(t, dir, 100, 60)
	alerts := `{"step":60,"severity":"SEV0","rule":"nan_inf","message":"loss is NaN"}` + "\n" + `not json` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "alerts.jsonl"), []byte(alerts), 0o644); err != nil {
		t.Fatal(err)
	}
	// A bad alerts line is skipped and counted: the report is written from
	// the good ones, says how many were skipped, and is not healthy.
	sum, err := Write(Input{RunDir: dir, UnigramLoss: math.NaN()})
	if err != nil {
		t.Fatalf("a bad alerts line stopped the report: %v", err)
	}
	md, _ := os.ReadFile(sum.Path)
	if sum.Healthy || sum.AlertLinesSkipped != 1 || sum.Alerts["SEV0"] != 1 || !strings.Contains(string(md), "alerts.jsonl lines skipped as unreadable: 1") {
		t.Fatalf("skipped alerts line: healthy=%v skipped=%d alerts=%v\n%s", sum.Healthy, sum.AlertLinesSkipped, sum.Alerts, md)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.jsonl"), []byte(alerts[:strings.Index(alerts, "not json")]), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err = Write(Input{RunDir: dir, UnigramLoss: 1.0})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Healthy || sum.NaNEvents != 1 || sum.Alerts["SEV0"] != 1 {
		t.Fatalf("problems not flagged: healthy=%v nan=%d alerts=%v", sum.Healthy, sum.NaNEvents, sum.Alerts)
	}
	joined := strings.Join(sum.Verdicts, "\n")
	if !strings.Contains(joined, "WARN  1 NaN/Inf events, 1 SEV0") || !strings.Contains(joined, "not below the unigram baseline") {
		t.Fatalf("verdicts: %s", joined)
	}
}

func TestWriteEmptyRun(t *testing.T) {
	if _, err := Write(Input{RunDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no metrics") {
		t.Fatalf("empty run: %v", err)
	}
}

func TestDataSectionTables(t *testing.T) {
	dir := t.TempDir()
	rep := datareport.Report{
		Created: "2026-11-21T00:00:00Z", Workers: 2, TimingsS: map[string]float64{"total": 3.5},
		Sources: []*datareport.SourceReport{{Name: "math", Stages: map[string]*datareport.StageCount{
			"read":     {In: datareport.Count{Docs: 100}, Out: datareport.Count{Docs: 100}},
			"clean":    {In: datareport.Count{Docs: 100}, Out: datareport.Count{Docs: 97}},
			"decontam": {In: datareport.Count{Docs: 97}, Out: datareport.Count{Docs: 95}},
		}, Kept: datareport.Count{Docs: 95, Bytes: 2_500_000}}},
		Totals:          map[string]*datareport.StageCount{"read": {In: datareport.Count{Docs: 100}}},
		Kept:            datareport.Count{Docs: 95, Bytes: 2_500_000},
		Rejects:         map[string]int64{"clean/gopher_quality/min_words": 3, "decontam/gsm8k": 2},
		NearDupRate:     0.0125,
		NearClusters:    4,
		Hotspots:        []datareport.Hotspot{{Size: 9, KeptID: "code:a.go", Sample: "// Copyright | header"}},
		TrainValOverlap: map[string]float64{"gsm8k": 0.02, "piqa": 0},
		Overlap: map[string]*datareport.Overlap{"gsm8k": {Docs: 2, Items: 2, Examples: []datareport.OverlapExample{
			{DocID: "math:train.jsonl:21", NGram: "bought stamps at the post office"}}}},
		Tokens: &datareport.TokenReport{Tokens: map[string]int64{"math": 12345}, TotalTokens: 12345},
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeDataReport(&b, dir, "")
	out := b.String()
	for _, want := range []string{
		"| math | 100 | – | −3 | – | – | −2 | 95 | 2.50 | 12345 |", // stages in pipeline order
		"| clean/gopher_quality/min_words | 3 |",
		"| decontam/gsm8k | 2 |",
		"1.250% dropped, in 4 clusters",
		`| 9 | code:a.go | // Copyright \| header |`,
		"| gsm8k | 2 | 2.000% | 2 | math:train.jsonl:21: “bought stamps at the post office” |",
		"| piqa | 0 | 0.000% | 0 | – |",
		"removed (2)",
		"<summary>report.json</summary>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("data section lacks %q:\n%s", want, out)
		}
	}
	// Rules are listed most frequent first.
	if strings.Index(out, "min_words") > strings.Index(out, "decontam/gsm8k |") {
		t.Error("rejects not sorted by count")
	}

	// The run's copy stands in for a dataset that moved.
	kept := filepath.Join(t.TempDir(), "data_report.json")
	if err := os.WriteFile(kept, js, 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	writeDataReport(&b, filepath.Join(dir, "moved"), kept)
	if !strings.Contains(b.String(), "| decontam/gsm8k | 2 |") || !strings.Contains(b.String(), kept) {
		t.Errorf("the run's copy of the data report was not shown:\n%s", b.String())
	}

	// A corrupt report names the file instead of failing the whole report.
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	writeDataReport(&b, dir, "")
	if !strings.Contains(b.String(), filepath.Join(dir, "report.json")) || !strings.Contains(b.String(), "not a valid data report") {
		t.Errorf("corrupt report.json: %s", b.String())
	}
}
