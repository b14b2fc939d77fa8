package show

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/monitor"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the printers")

// golden compares what print writes with testdata/name.golden: the bytes
// kestrel printed before the printers moved here from the libraries.
func golden(t *testing.T, name string, print func(w io.Writer) error) {
	t.Helper()
	var b bytes.Buffer
	if err := print(&b); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("%s: got\n%s\nwant (%s)\n%s", name, b.Bytes(), path, want)
	}
}

// TestGoldenTables: the tables and summaries of kestrel compare,
// checkpoints, drill, incidents, rewind, replay, eval, import, tokenizer
// stats, bench peak, report and watch, byte for byte as the libraries
// printed them before they moved here.
func TestGoldenTables(t *testing.T) {
	for _, c := range []struct {
		name  string
		print func(w io.Writer) error
	}{
		{"compare", func(w io.Writer) error { return Compare(w, compareFixture()) }},
		{"compare_json", func(w io.Writer) error { return IndentedJSON(w, compareFixture()) }},
		{"checkpoints", func(w io.Writer) error { return Checkpoints(w, "runs/x", checkpointsFixture()) }},
		{"checkpoints_none", func(w io.Writer) error { return Checkpoints(w, "runs/x", checkpointsFixture()[:1]) }},
		{"checkpoints_empty", func(w io.Writer) error { return Checkpoints(w, "runs/x", nil) }},
		{"checkpoints_json", func(w io.Writer) error { return CheckpointsJSON(w, checkpointsFixture()) }},
		{"drill", func(w io.Writer) error { return Drill(w, drillFixture(), false) }},
		{"drill_json", func(w io.Writer) error { return Drill(w, drillFixture(), true) }},
		{"drill_rows", func(w io.Writer) error {
			for _, r := range drillFixture().Rows {
				if _, err := io.WriteString(w, DrillRow(r)+"\n"); err != nil {
					return err
				}
			}
			return nil
		}},
		{"incidents", func(w io.Writer) error { return Incidents(w, "runs/x", incidentsFixture(), nil, false) }},
		{"incidents_json", func(w io.Writer) error { return Incidents(w, "runs/x", incidentsFixture(), nil, true) }},
		{"incidents_empty", func(w io.Writer) error { return Incidents(w, "runs/x", nil, nil, false) }},
		{"rewind", func(w io.Writer) error {
			for _, iv := range rewindFixtures() {
				Rewind(w, "runs/x", iv)
			}
			return nil
		}},
		{"replay", func(w io.Writer) error { return Replay(w, replayFixture()) }},
		{"eval", func(w io.Writer) error { return Eval(w, evalFixture(), false) }},
		{"eval_json", func(w io.Writer) error { return Eval(w, evalFixture(), true) }},
		{"import", func(w io.Writer) error {
			return ImportSummary(w, "hf/llama", "run.toml", "hf:hf/llama", importFixture())
		}},
		{"tokenizer_stats", func(w io.Writer) error { return TokenizerStats(w, statsFixture()) }},
		{"peak", func(w io.Writer) error {
			for _, r := range peakFixtures() {
				Peak(w, r)
				if err := JSON(w, PeakFields(r)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"data_inspect", func(w io.Writer) error {
			for _, in := range inspectFixtures() {
				DataInspect(w, in)
			}
			return nil
		}},
		{"verdict", func(w io.Writer) error { Verdict(w, verdictFixture()); return nil }},
		{"watch", func(w io.Writer) error {
			for _, a := range []monitor.Alert{
				{Severity: monitor.SEV1, Rule: "loss_spike", Step: 120, Message: "train_loss_raw 4.1 above the band"},
				{Severity: monitor.SEV0, Rule: "divergence", Step: 7, Message: "loss NaN", Evidence: "incidents/sev0-7"},
			} {
				if _, err := io.WriteString(w, WatchAlert(a, "watch-out")+"\n"); err != nil {
					return err
				}
			}
			for _, r := range watchFixtures() {
				Watch(w, r)
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) { golden(t, c.name, c.print) })
	}
}
