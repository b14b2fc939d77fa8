// Package report writes a run's report: report.md plus PNG plots of the
// seed-000 panels, the data report, alerts and classified spikes, generated
// samples and the run manifest — what a person opens to learn whether a run
// was healthy. It reads only files: metrics.jsonl, alerts.jsonl,
// manifest.json, config.toml, samples.jsonl and the dataset's report.json.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Sample is one generated text shown in the report.
type Sample struct {
	Prompt      string
	Temperature float64
	TopK        int
	EMA         bool
	Text        string
}

// Input is what the report is made from.
type Input struct {
	RunDir     string // the run directory (report/ is written inside it)
	DatasetDir string // the prepared dataset (its report.json), optional
	// DataReport, when set, is the data report to show in place of
	// DatasetDir's report.json (the run's data_report.json copy, for a
	// dataset that moved or was deleted).
	DataReport string
	Samples    []Sample // generated text, optional
	// UnigramLoss is the entropy (nats/token) of the training data's token
	// distribution: the loss of a model that ignores context. NaN = unknown.
	UnigramLoss float64
	Title       string
	// Status says how the run stands: how it ended ("finished at step
	// 2000", "interrupted …", "stopped: …") or that it is live (a trainer
	// holds it; the report is a snapshot). "" = not known.
	Status string
	Live   bool
}

// Summary is what the report concluded, for printing.
type Summary struct {
	Path        string // report.md
	Plots       []string
	FinalVal    float64 // last val_loss (NaN when none)
	FinalValEMA float64
	FirstVal    float64
	FinalTrain  float64
	Unigram     float64
	Steps       float64
	Tokens      float64
	WallSeconds float64
	Alerts      map[string]int // by severity
	// AlertLinesSkipped counts the bad lines of alerts.jsonl the report
	// skipped; when positive the run is not called healthy.
	AlertLinesSkipped int
	Spikes            int
	Skipped           int
	NaNEvents         int
	Healthy           bool
	Verdicts          []string // one line each: "ok …" or "WARN …"
	TokensPerSec      float64
	MFU               float64
	MaxAttnLogit      float64
	MinAttnEntrpy     float64
	// Checkpoints is how many checkpoints samples.jsonl holds generations
	// of; SampleLinesSkipped its unreadable lines.
	Checkpoints        int
	SampleLinesSkipped int
	// PlotErrors are the plots that could not be drawn (the report says
	// which and why).
	PlotErrors []string
}

// Write generates RunDir/report/report.md and its plots. report/ is
// created, or replaced file by file when it is kestrel's (it holds
// report.md or a plot, or is empty); anything else there — a link, a file,
// a directory of someone else's files — is refused (internal/fileguard).
func Write(in Input) (*Summary, error) {
	dir := rundir.Of(in.RunDir).Report()
	markers := []string{"report.md"}
	for _, p := range panels(math.NaN()) {
		markers = append(markers, p.file)
	}
	if err := (fileguard.Dir{Path: dir, What: "run report", Markers: markers}).Check(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	log, err := runlog.Load(rundir.Of(in.RunDir).Metrics())
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if log.Rows == 0 {
		return nil, fmt.Errorf("report: %s has no metrics (did the run start?)", log.Path)
	}
	alerts, err := runlog.ReadAlerts(rundir.Of(in.RunDir).Alerts())
	skipped := runlog.SkippedLines(err) // bad lines: reported on the good ones, and said in the verdict
	if err != nil && skipped == 0 {
		return nil, fmt.Errorf("report: %w", err)
	}
	ivs, err := runlog.ReadInterventions(in.RunDir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	sum := &Summary{Path: filepath.Join(dir, "report.md"), Unigram: in.UnigramLoss, Alerts: map[string]int{}, AlertLinesSkipped: skipped}
	for _, p := range panels(in.UnigramLoss) {
		ok, err := p.draw(log, dir)
		if err != nil { // one plot that fails is said in the report, not the end of it
			sum.PlotErrors = append(sum.PlotErrors, err.Error())
			continue
		}
		if ok {
			sum.Plots = append(sum.Plots, p.file)
		}
	}
	gens, skippedGens, badGen, err := runlog.ReadGenerations(in.RunDir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	sum.SampleLinesSkipped = skippedGens
	sum.fill(log, alerts)
	if skippedGens > 0 {
		sum.Verdicts = append(sum.Verdicts, fmt.Sprintf("WARN  samples.jsonl lines skipped as unreadable: %d (%s)", skippedGens, badGen))
	}
	var md strings.Builder
	sum.markdown(&md, in, log, alerts, ivs, gens, badGen)
	if err := atomicfile.WriteFile(sum.Path, []byte(md.String())); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return sum, nil
}

func last(log *runlog.Log, names ...string) float64 {
	for _, n := range names {
		if v, _, ok := log.Last(n); ok {
			return v
		}
	}
	return math.NaN()
}

func firstVal(log *runlog.Log, name string) float64 {
	_, ys, _ := log.Series(name, "step")
	if len(ys) == 0 {
		return math.NaN()
	}
	return ys[0]
}

// extremes returns the minimum and maximum of name over the run and how
// many rows have it equal to 1 (for boolean flags).
func extremes(log *runlog.Log, name string) (lo, hi float64, ones int) {
	lo, hi = math.Inf(1), math.Inf(-1)
	_, ys, _ := log.Series(name, "step")
	for _, v := range ys {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
		if v == 1 {
			ones++
		}
	}
	return lo, hi, ones
}

func (s *Summary) fill(log *runlog.Log, alerts []runlog.Alert) {
	s.FinalVal = last(log, "val_loss")
	s.FinalValEMA = last(log, "val_loss_ema")
	s.FirstVal = firstVal(log, "val_loss")
	s.FinalTrain = last(log, "train_loss_ema", "train_loss_raw")
	s.Steps = math.NaN()
	if _, st, ok := log.Last("train_loss_raw"); ok {
		s.Steps = st
	}
	for i := log.Rows - 1; i >= 0; i-- {
		if !log.Superseded[i] && !math.IsNaN(log.Tokens[i]) {
			s.Tokens, s.WallSeconds = log.Tokens[i], log.Time[i]
			break
		}
	}
	_, _, s.Skipped = extremes(log, "skipped")
	_, nan, _ := extremes(log, "nan_inf_events")
	if !math.IsInf(nan, 0) {
		s.NaNEvents = int(nan)
	}
	s.TokensPerSec = median(log, "tokens_per_sec")
	s.MFU = median(log, "mfu")
	_, s.MaxAttnLogit, _ = extremes(log, "max_attn_logit")
	s.MinAttnEntrpy, _, _ = extremes(log, "attn_entropy")
	for _, a := range alerts {
		sev := string(a.Severity)
		s.Alerts[sev]++
		if a.Verdict != "" {
			s.Spikes++
		}
	}
	ok := func(cond bool, good, bad string) {
		if cond {
			s.Verdicts = append(s.Verdicts, "ok    "+good)
		} else {
			s.Verdicts = append(s.Verdicts, "WARN  "+bad)
		}
	}
	s.Healthy = true
	check := func(cond bool, good, bad string) {
		ok(cond, good, bad)
		s.Healthy = s.Healthy && cond
	}
	if s.AlertLinesSkipped > 0 {
		check(false, "", fmt.Sprintf("alerts.jsonl lines skipped as unreadable: %d (the alert counts omit them)", s.AlertLinesSkipped))
	}
	check(s.NaNEvents == 0 && s.Alerts["SEV0"] == 0, "no NaN/Inf and no SEV0 incident", fmt.Sprintf("%d NaN/Inf events, %d SEV0 incidents", s.NaNEvents, s.Alerts["SEV0"]))
	if !math.IsNaN(s.FinalVal) && !math.IsNaN(s.FirstVal) {
		check(s.FinalVal < s.FirstVal, fmt.Sprintf("held-out loss fell from %.3f to %.3f", s.FirstVal, s.FinalVal), fmt.Sprintf("held-out loss did not fall (%.3f → %.3f)", s.FirstVal, s.FinalVal))
	} else {
		check(false, "", "no held-out loss was recorded")
	}
	if !math.IsNaN(s.Unigram) && !math.IsNaN(s.FinalVal) {
		check(s.FinalVal < s.Unigram, fmt.Sprintf("held-out loss %.3f is below the unigram baseline %.3f (the model uses context)", s.FinalVal, s.Unigram),
			fmt.Sprintf("held-out loss %.3f is not below the unigram baseline %.3f", s.FinalVal, s.Unigram))
	}
	if !math.IsNaN(s.FinalVal) && !math.IsNaN(s.FinalTrain) {
		gap := s.FinalVal - s.FinalTrain
		ok(gap < 0.5, fmt.Sprintf("train–val gap %.3f", gap), fmt.Sprintf("train–val gap %.3f is large (overfitting or a train/val mismatch)", gap))
	}
	rows := float64(max(1, log.Rows))
	ok(float64(s.Skipped) < 0.01*rows, fmt.Sprintf("%d skipped steps", s.Skipped), fmt.Sprintf("%d skipped steps (more than 1%%)", s.Skipped))
	if !math.IsInf(s.MaxAttnLogit, 0) {
		ok(s.MaxAttnLogit < 100, fmt.Sprintf("max attention logit peaked at %.1f (< 100)", s.MaxAttnLogit), fmt.Sprintf("max attention logit reached %.1f (runaway above 100; red flag above 1000)", s.MaxAttnLogit))
	}
	ok(s.Alerts["SEV1"] == 0, "no SEV1 alerts", fmt.Sprintf("%d SEV1 alerts (see below)", s.Alerts["SEV1"]))
}

func median(log *runlog.Log, name string) float64 {
	_, ys, _ := log.Series(name, "step")
	if len(ys) == 0 {
		return math.NaN()
	}
	c := append([]float64(nil), ys...)
	sort.Float64s(c)
	return c[len(c)/2]
}

func f3(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf("%.4g", v)
}

func (s *Summary) markdown(b *strings.Builder, in Input, log *runlog.Log, alerts []runlog.Alert, ivs []runlog.Intervention, gens []runlog.Generation, badGen string) {
	title := in.Title
	if title == "" {
		title = filepath.Base(in.RunDir)
	}
	fmt.Fprintf(b, "# Run report: %s\n\n", title)
	fmt.Fprintf(b, "Generated %s from `%s`.\n\n", time.Now().UTC().Format(time.RFC3339), in.RunDir)
	if in.Status != "" {
		fmt.Fprintf(b, "**Status:** %s\n\n", mdCell(in.Status))
	}
	verdict := "**healthy**"
	if !s.Healthy {
		verdict = "**needs a look**"
	}
	if in.Live {
		verdict += " (live: so far)"
	}
	fmt.Fprintf(b, "## Verdict: %s\n\n```\n%s\n```\n\n", verdict, strings.Join(s.Verdicts, "\n"))

	b.WriteString("## Run\n\n| | |\n|---|---|\n")
	fmt.Fprintf(b, "| steps | %s |\n| tokens | %s |\n| wall clock | %s |\n", f3(s.Steps), f3(s.Tokens), (time.Duration(s.WallSeconds) * time.Second).String())
	fmt.Fprintf(b, "| tokens/s (median) | %s |\n| MFU (median) | %s |\n", f3(s.TokensPerSec), f3(s.MFU))
	fmt.Fprintf(b, "| final held-out loss (raw / EMA weights) | %s / %s |\n| final train loss (smoothed) | %s |\n", f3(s.FinalVal), f3(s.FinalValEMA), f3(s.FinalTrain))
	fmt.Fprintf(b, "| unigram baseline of the data | %s |\n\n", f3(s.Unigram))
	if len(log.Names()) > 0 {
		var slices []string
		for _, n := range log.Names() {
			if strings.HasPrefix(n, "slice_val_loss/") {
				slices = append(slices, fmt.Sprintf("| %s | %s |", strings.TrimPrefix(n, "slice_val_loss/"), f3(last(log, n))))
			}
		}
		if len(slices) > 0 {
			fmt.Fprintf(b, "Held-out loss per source at the end:\n\n| source | val loss |\n|---|---|\n%s\n\n", strings.Join(slices, "\n"))
		}
	}

	writeBenchmarks(b, log)
	writeMemory(b, log, in.RunDir)
	writeOnTrack(b, log) // ontrack.go

	b.WriteString("## Curves\n\nPanels in the order seed 000 reads them: held-out loss, train loss, norms, learning rate, throughput, then attention vitals, the data mix and the frozen probe batch (how far the outputs move between checkpoints). Long series keep each bucket's minimum and maximum, so spikes stay visible.\n\n")
	for _, p := range s.Plots {
		fmt.Fprintf(b, "![%s](%s)\n\n", strings.TrimSuffix(p, ".png"), p)
	}
	for _, e := range s.PlotErrors {
		fmt.Fprintf(b, "Not drawn: %s\n\n", mdCell(e))
	}

	b.WriteString("## Alerts and spikes\n\n")
	if len(alerts) == 0 {
		b.WriteString("No alerts were raised.\n\n")
	} else {
		b.WriteString("| step | severity | rule | what | verdict |\n|---|---|---|---|---|\n")
		for _, a := range alerts {
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s |\n", a.Step, a.Severity, a.Rule, mdCell(a.Message), mdCell(a.Verdict))
		}
		b.WriteString("\n")
	}

	writeInterventions(b, ivs)

	b.WriteString("## Data\n\n")
	writeDataReport(b, in.DatasetDir, in.DataReport)

	s.Checkpoints = writeGenerations(b, gens, badGen, s.SampleLinesSkipped)
	if len(in.Samples) > 0 {
		b.WriteString("### From the final weights\n\n")
	}
	for _, sm := range in.Samples {
		w := "raw"
		if sm.EMA {
			w = "EMA"
		}
		fmt.Fprintf(b, "**temperature %.2g, top-k %d, %s weights** — prompt %q\n\n```\n%s\n```\n\n", sm.Temperature, sm.TopK, w, sm.Prompt, strings.ReplaceAll(sm.Prompt+sm.Text, "```", "'''"))
	}

	b.WriteString("## Manifest\n\n")
	if m, err := os.ReadFile(rundir.Of(in.RunDir).Manifest()); err == nil {
		var pretty bytes.Buffer
		if json.Indent(&pretty, m, "", "  ") == nil {
			m = pretty.Bytes()
		}
		fmt.Fprintf(b, "```json\n%s\n```\n", m)
	} else {
		b.WriteString("No manifest.json in the run directory.\n")
	}
}

// writeInterventions lists interventions.jsonl: every rewind, what it
// skipped and changed, and where the abandoned trajectory was archived.
func writeInterventions(b *strings.Builder, ivs []runlog.Intervention) {
	b.WriteString("## Interventions\n\n")
	if len(ivs) == 0 {
		b.WriteString("None: the run was never rewound.\n\n")
		return
	}
	b.WriteString("Each rewind rolled the run back to a checkpoint; the curves above are the trajectory that continued from it. The metrics of the abandoned steps are kept in the archive file named.\n\n")
	b.WriteString("| id | time | from step | to step | what changed | metrics archive |\n|---|---|---|---|---|---|\n")
	for _, iv := range ivs {
		what := iv.Summary()
		if what == "" {
			what = "(nothing: plain rollback)"
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s | %s |\n", mdCell(iv.ID), iv.Time, iv.FromStep, iv.ToStep, mdCell(what), mdCell(iv.MetricsArchive))
	}
	b.WriteString("\n")
}

func mdCell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// writeDataReport renders the dataset's report.json as tables a person can
// scan: documents through each stage per source, rejects per rule, the
// duplicates found and the benchmark contamination caught. The full JSON
// stays one click away.
func writeDataReport(b *strings.Builder, datasetDir, path string) {
	if datasetDir == "" && path == "" {
		b.WriteString("The run trained on a plain text file (no prepared dataset).\n\n")
		return
	}
	if path == "" {
		path = filepath.Join(datasetDir, datareport.FileName)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(b, "No data report found in `%s`.\n\n", datasetDir)
		return
	}
	rep, err := datareport.Parse(raw, path)
	if err != nil {
		fmt.Fprintf(b, "`%s` is not a valid data report: %v\n\n", path, err)
		return
	}
	fmt.Fprintf(b, "From `%s` (prepared %s with %d workers in %.1f s).\n\n", path, rep.Created, rep.Workers, rep.TimingsS["total"])

	b.WriteString("### Documents through the pipeline\n\n")
	b.WriteString("Documents read per source, then removed by each stage, then kept.\n\n| source | read |")
	for _, st := range datareport.Stages[1:] {
		fmt.Fprintf(b, " %s |", st)
	}
	b.WriteString(" kept | kept MB | tokens |\n|---|---:|")
	b.WriteString(strings.Repeat("---:|", len(datareport.Stages)-1+3) + "\n")
	tokens := func(src string) string {
		if rep.Tokens == nil {
			return "–"
		}
		return fmt.Sprint(rep.Tokens.Tokens[src])
	}
	row := func(name string, stages map[string]*datareport.StageCount, kept datareport.Count, tok string) {
		fmt.Fprintf(b, "| %s |", name)
		for i, st := range datareport.Stages {
			c, ok := stages[st]
			switch {
			case !ok:
				b.WriteString(" – |")
			case i == 0:
				fmt.Fprintf(b, " %d |", c.In.Docs)
			case c.In.Docs == c.Out.Docs:
				b.WriteString(" 0 |")
			default:
				fmt.Fprintf(b, " −%d |", c.In.Docs-c.Out.Docs)
			}
		}
		fmt.Fprintf(b, " %d | %.2f | %s |\n", kept.Docs, float64(kept.Bytes)/1e6, tok)
	}
	for _, src := range rep.Sources {
		row(src.Name, src.Stages, src.Kept, tokens(src.Name))
	}
	total := "–"
	if rep.Tokens != nil {
		total = fmt.Sprint(rep.Tokens.TotalTokens)
	}
	row("**all**", rep.Totals, rep.Kept, total)
	b.WriteString("\n(– : the stage does not apply to the source, e.g. HTML extraction for plain text.)\n\n")

	b.WriteString("### Rejected documents per rule\n\n")
	if len(rep.Rejects) == 0 {
		b.WriteString("No document was rejected.\n\n")
	} else {
		rules := rep.RejectRules()
		b.WriteString("| stage/rule | documents |\n|---|---:|\n")
		for _, r := range rules {
			fmt.Fprintf(b, "| %s | %d |\n", r, rep.Rejects[r])
		}
		fmt.Fprintf(b, "\nEvery rejected document is kept with its stage, rule and detail under `%s/rejects/` (zstd-compressed JSON lines).\n\n", datasetDir)
	}

	b.WriteString("### Duplicates\n\n")
	fmt.Fprintf(b, "Exact duplicates: %.3f%% of documents. Near duplicates (MinHash LSH): %.3f%% dropped, in %d clusters.\n\n",
		100*rep.ExactDupRate, 100*rep.NearDupRate, rep.NearClusters)
	if len(rep.Hotspots) > 0 {
		b.WriteString("| cluster size | kept document | starts with |\n|---:|---|---|\n")
		for i, h := range rep.Hotspots {
			if i == 5 {
				break
			}
			fmt.Fprintf(b, "| %d | %s | %s |\n", h.Size, mdCell(h.KeptID), mdCell(clip(h.Sample, 100)))
		}
		b.WriteString("\n")
	}

	b.WriteString("### Benchmark contamination\n\n")
	sets := make([]string, 0, len(rep.TrainValOverlap))
	for s := range rep.TrainValOverlap {
		sets = append(sets, s)
	}
	sort.Strings(sets)
	if len(sets) == 0 {
		b.WriteString("Decontamination was off.\n\n")
	} else {
		b.WriteString("| eval set | contaminated docs | share | eval items matched | example (doc: shared n-gram) |\n|---|---:|---:|---:|---|\n")
		for _, s := range sets {
			ov := rep.Overlap[s]
			if ov == nil {
				ov = &datareport.Overlap{}
			}
			ex := "–"
			if len(ov.Examples) > 0 {
				ex = fmt.Sprintf("%s: “%s”", ov.Examples[0].DocID, ov.Examples[0].NGram)
			}
			fmt.Fprintf(b, "| %s | %d | %.3f%% | %d | %s |\n", s, ov.Docs, 100*rep.TrainValOverlap[s], ov.Items, mdCell(ex))
		}
		fmt.Fprintf(b, "\nContaminated documents were removed (%d) or had the overlapping span cut (%d).\n\n", sumPrefix(rep.Rejects, "decontam/"), rep.DecontamCutDocs)
	}

	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "", "  ") == nil {
		raw = pretty.Bytes()
	}
	fmt.Fprintf(b, "<details><summary>report.json</summary>\n\n```json\n%s\n```\n</details>\n\n", raw)
}

// sumPrefix adds the counts whose key starts with prefix.
func sumPrefix(m map[string]int64, prefix string) int64 {
	var n int64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
