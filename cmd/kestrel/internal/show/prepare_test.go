package show

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
	"github.com/kestrel-lm/kestrel/internal/report"
	"github.com/kestrel-lm/kestrel/internal/run"
)

// prepareFixture is a report with every part of the summary: two
// sources (one truncated), rejects, problems past the first five, a
// hotspot whose sample is cut inside a multi-byte rune, the overlap of two
// eval sets (one without docs) and tokens.
func prepareFixture() *datareport.Report {
	web := datareport.NewSourceReport("web")
	web.Stage(datareport.StageRead).In = datareport.Count{Docs: 120, Bytes: 2_400_000}
	web.Stage(datareport.StageRead).Out = datareport.Count{Docs: 118, Bytes: 2_350_000}
	web.Stage(datareport.StageClean).In = datareport.Count{Docs: 118, Bytes: 2_350_000}
	web.Stage(datareport.StageClean).Out = datareport.Count{Docs: 80, Bytes: 1_900_000}
	web.Stage(datareport.StageExact).Out = datareport.Count{Docs: 1} // no docs in: left out
	web.Kept, web.BytesPerDoc = datareport.Count{Docs: 80, Bytes: 1_900_000}, datareport.Percentiles{P50: 20000, P90: 41000}
	web.Truncated = true
	math := datareport.NewSourceReport("math")
	math.Stage(datareport.StageRead).In = datareport.Count{Docs: 300, Bytes: 90_000}
	math.Stage(datareport.StageRead).Out = datareport.Count{Docs: 300, Bytes: 90_000}
	math.Kept, math.BytesPerDoc = datareport.Count{Docs: 297, Bytes: 88_000}, datareport.Percentiles{P50: 290, P90: 410}
	return &datareport.Report{
		Out:     "datasets/demo",
		Sources: []*datareport.SourceReport{web, math},
		Kept:    datareport.Count{Docs: 377, Bytes: 1_988_000},
		Rejects: map[string]int64{"clean/gopher_quality": 30, "clean/c4": 8, "exact_dedup/duplicate": 8, "near_dedup/cluster": 3},
		Problems: datareport.ProblemReport{Total: 7, FilesSkipped: 1, List: []string{
			"a.jsonl:line 1: json: bad", "a.jsonl:line 2: json: bad", "a.jsonl:line 3: json: bad",
			"a.jsonl:line 4: json: bad", "a.jsonl:line 5: json: bad", "a.jsonl:line 6: json: bad"}},
		ExactDupRate: 0.0123, NearDupRate: 0.00456, NearClusters: 2,
		Hotspots: []datareport.Hotspot{
			{Size: 4, KeptID: "web:a:1", Sample: strings.Repeat("é", 60)},
			{Size: 3, KeptID: "web:a:9", Sample: "short"},
			{Size: 2, KeptID: "web:b:2", Sample: "two"},
			{Size: 2, KeptID: "web:b:7", Sample: "not shown"},
		},
		TrainValOverlap: map[string]float64{"piqa": 0, "gsm8k": 0.0125},
		Overlap:         map[string]*datareport.Overlap{"gsm8k": {Docs: 1, Items: 4, ItemIDs: []string{"gsm8k:1", "gsm8k:2", "gsm8k:3", "gsm8k:4"}}},
		BytesPerDoc:     datareport.Percentiles{P10: 120, P50: 300, P90: 30000, P99: 52000, Max: 70000},
		Tokens:          &datareport.TokenReport{TotalTokens: 501234, VocabSize: 4096, Mode: "train", Manifest: "datasets/demo/manifest.json"},
		TimingsS:        map[string]float64{"total": 12.34},
	}
}

// TestDemoGolden: kestrel demo's closing summary, healthy with a
// held-out loss and needing a look without one, byte for byte as
// internal/run printed it.
func TestDemoGolden(t *testing.T) {
	golden(t, "demo_summary", func(w io.Writer) error {
		r := &run.DemoResult{Data: "datasets/demo-quick", Run: "runs/demo-quick", Report: &report.Summary{Path: "runs/demo-quick/report/report.md", Healthy: true,
			Verdicts: []string{"loss fell 5.5 → 3.1", "no SEV0/SEV1 alerts"}, FinalVal: 3.1234, FinalValEMA: 3.0987, Unigram: 5.4321}}
		if err := DemoSummary(w, r); err != nil {
			return err
		}
		r.Report = &report.Summary{Path: "r.md", Verdicts: []string{"2 SEV1 alerts"}, FinalVal: math.NaN()}
		return DemoSummary(w, r)
	})
}

// TestPrepareGolden: kestrel prepare's summary (built and up to date)
// and kestrel bench prepare's lines, byte for byte as prepare printed
// them before they moved here.
func TestPrepareGolden(t *testing.T) {
	golden(t, "prepare_summary", func(w io.Writer) error { return PrepareSummary(w, prepareFixture()) })
	golden(t, "prepare_up_to_date", func(w io.Writer) error {
		r := prepareFixture()
		r.UpToDate, r.Fingerprint = true, "0123456789abcdef0123"
		return PrepareSummary(w, r)
	})
	golden(t, "bench_prepare", func(w io.Writer) error {
		for _, r := range []prepare.BenchResult{
			{Op: "prepare", Stage: "generate", MB: 200, Note: "12 files, planted 40 exact and 30 near duplicates"},
			{Op: "prepare", Stage: "clean", MBPerS: 41.25, Seconds: 4.85, PeakRSSMB: 312.5, Note: "gopher+c4"},
			{Op: "prepare", Stage: "summary", Note: "end to end 20.1 MB/s"},
		} {
			if err := PrepareBench(w, false, r); err != nil {
				return err
			}
			if err := PrepareBench(w, true, r); err != nil {
				return err
			}
		}
		return nil
	})
}
