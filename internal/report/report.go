// Package report writes a run's report: report.md plus PNG plots of the
// seed-000 panels, the data report, alerts and classified spikes, generated
// samples and the run manifest — what a person opens to learn whether a run
// was healthy. It reads only files: metrics.jsonl, alerts.jsonl,
// manifest.json, config.toml and the dataset's report.json.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

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
	RunDir     string   // the run directory (report/ is written inside it)
	DatasetDir string   // the prepared dataset (its report.json), optional
	Samples    []Sample // generated text, optional
	// UnigramLoss is the entropy (nats/token) of the training data's token
	// distribution: the loss of a model that ignores context. NaN = unknown.
	UnigramLoss float64
	Title       string
}

// Summary is what the report concluded, for printing.
type Summary struct {
	Path          string // report.md
	Plots         []string
	FinalVal      float64 // last val_loss (NaN when none)
	FinalValEMA   float64
	FirstVal      float64
	FinalTrain    float64
	Unigram       float64
	Steps         float64
	Tokens        float64
	WallSeconds   float64
	Alerts        map[string]int // by severity
	Spikes        int
	Skipped       int
	NaNEvents     int
	Healthy       bool
	Verdicts      []string // one line each: "ok …" or "WARN …"
	TokensPerSec  float64
	MFU           float64
	MaxAttnLogit  float64
	MinAttnEntrpy float64
}

// alert is one line of alerts.jsonl, read loosely (any trainer's monitor).
type alert map[string]any

func (a alert) s(keys ...string) string {
	for _, k := range keys {
		switch v := a[k].(type) {
		case string:
			return v
		case float64:
			return fmt.Sprint(v)
		}
	}
	return ""
}

func readAlerts(path string) ([]alert, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []alert
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var a alert
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return out, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// Write generates RunDir/report/report.md and its plots.
func Write(in Input) (*Summary, error) {
	dir := filepath.Join(in.RunDir, "report")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	log, err := runlog.Load(filepath.Join(in.RunDir, "metrics.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if log.Rows == 0 {
		return nil, fmt.Errorf("report: %s has no metrics (did the run start?)", log.Path)
	}
	alerts, err := readAlerts(filepath.Join(in.RunDir, "alerts.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	sum := &Summary{Path: filepath.Join(dir, "report.md"), Unigram: in.UnigramLoss, Alerts: map[string]int{}}
	for _, p := range panels(in.UnigramLoss) {
		ok, err := p.draw(log, dir)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if ok {
			sum.Plots = append(sum.Plots, p.file)
		}
	}
	sum.fill(log, alerts)
	var md strings.Builder
	sum.markdown(&md, in, log, alerts)
	if err := writeAtomic(sum.Path, []byte(md.String())); err != nil {
		return nil, err
	}
	return sum, nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
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

func (s *Summary) fill(log *runlog.Log, alerts []alert) {
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
		sev := a.s("severity", "sev")
		s.Alerts[sev]++
		if a.s("verdict", "classification") != "" {
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

func (s *Summary) markdown(b *strings.Builder, in Input, log *runlog.Log, alerts []alert) {
	title := in.Title
	if title == "" {
		title = filepath.Base(in.RunDir)
	}
	fmt.Fprintf(b, "# Run report: %s\n\n", title)
	fmt.Fprintf(b, "Generated %s from `%s`.\n\n", time.Now().UTC().Format(time.RFC3339), in.RunDir)
	verdict := "**healthy**"
	if !s.Healthy {
		verdict = "**needs a look**"
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

	b.WriteString("## Curves\n\nPanels in the order seed 000 reads them: held-out loss, train loss, norms, learning rate, throughput, then attention vitals and the data mix. Long series keep each bucket's minimum and maximum, so spikes stay visible.\n\n")
	for _, p := range s.Plots {
		fmt.Fprintf(b, "![%s](%s)\n\n", strings.TrimSuffix(p, ".png"), p)
	}

	b.WriteString("## Alerts and spikes\n\n")
	if len(alerts) == 0 {
		b.WriteString("No alerts were raised.\n\n")
	} else {
		b.WriteString("| step | severity | rule | what | verdict |\n|---|---|---|---|---|\n")
		for _, a := range alerts {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", a.s("step"), a.s("severity", "sev"), a.s("rule", "name"), mdCell(a.s("message", "detail", "summary")), mdCell(a.s("verdict", "classification")))
		}
		b.WriteString("\n")
	}

	b.WriteString("## Data\n\n")
	writeDataReport(b, in.DatasetDir)

	b.WriteString("## Samples\n\n")
	if len(in.Samples) == 0 {
		b.WriteString("No samples were generated.\n\n")
	}
	for _, sm := range in.Samples {
		w := "raw"
		if sm.EMA {
			w = "EMA"
		}
		fmt.Fprintf(b, "**temperature %.2g, top-k %d, %s weights** — prompt %q\n\n```\n%s\n```\n\n", sm.Temperature, sm.TopK, w, sm.Prompt, strings.ReplaceAll(sm.Prompt+sm.Text, "```", "'''"))
	}

	b.WriteString("## Manifest\n\n")
	if m, err := os.ReadFile(filepath.Join(in.RunDir, "manifest.json")); err == nil {
		var pretty bytes.Buffer
		if json.Indent(&pretty, m, "", "  ") == nil {
			m = pretty.Bytes()
		}
		fmt.Fprintf(b, "```json\n%s\n```\n", m)
	} else {
		b.WriteString("No manifest.json in the run directory.\n")
	}
}

func mdCell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// writeDataReport renders the dataset's report.json: per-source counts,
// reject counts per rule, duplicates and contamination. Unknown layouts are
// shown as their top-level numbers.
func writeDataReport(b *strings.Builder, datasetDir string) {
	if datasetDir == "" {
		b.WriteString("The run trained on a plain text file (no prepared dataset).\n\n")
		return
	}
	raw, err := os.ReadFile(filepath.Join(datasetDir, "report.json"))
	if err != nil {
		fmt.Fprintf(b, "No data report found in `%s`.\n\n", datasetDir)
		return
	}
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		fmt.Fprintf(b, "`%s/report.json` is not valid JSON: %v\n\n", datasetDir, err)
		return
	}
	fmt.Fprintf(b, "From `%s/report.json`.\n\n", datasetDir)
	keys := make([]string, 0, len(rep))
	for k := range rep {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("| field | value |\n|---|---|\n")
	for _, k := range keys {
		switch v := rep[k].(type) {
		case float64, string, bool:
			fmt.Fprintf(b, "| %s | %v |\n", k, v)
		}
	}
	b.WriteString("\n")
	for _, k := range keys {
		switch v := rep[k].(type) {
		case map[string]any, []any:
			js, _ := json.MarshalIndent(v, "", "  ")
			if len(js) > 4000 {
				js = append(js[:4000], []byte("\n…")...)
			}
			fmt.Fprintf(b, "<details><summary>%s</summary>\n\n```json\n%s\n```\n</details>\n\n", k, js)
		}
	}
}
