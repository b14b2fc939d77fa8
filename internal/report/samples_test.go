package report

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

func TestSampleChanges(t *testing.T) {
	g := func(step int, prompt, mode, text string) runlog.Generation {
		return runlog.Generation{Step: step, Prompt: prompt, Mode: mode, Text: text}
	}
	gens := []runlog.Generation{ // out of step order: a resume's records come after
		g(40, "A", runlog.ModeGreedy, "the the the the"),
		g(20, "A", runlog.ModeGreedy, "the cat sat"),
		g(20, "A", runlog.ModeSampled, "ignored"),
		g(20, "B", runlog.ModeGreedy, "xyz"),
		g(60, "A", runlog.ModeGreedy, "the the the the"),
	}
	want := []SampleChange{
		{Prompt: "A", Step: 20, Prev: -1, Distinct: 1},
		{Prompt: "B", Step: 20, Prev: -1, Distinct: 1},
		{Prompt: "A", Step: 40, Prev: 20, Common: 4, Distinct: 0.25},
		{Prompt: "A", Step: 60, Prev: 40, Same: true, Common: 15, Distinct: 0.25},
	}
	got := SampleChanges(gens)
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, c := range []struct {
		in   SampleChange
		want string
	}{{want[0], "first checkpoint"}, {want[2], "new after 4 chars (vs step 20)"}, {want[3], "same as step 40"}, {SampleChange{Prev: 20}, "all new (vs step 20)"}} {
		if s := c.in.changeCell(); s != c.want {
			t.Errorf("changeCell %q, want %q", s, c.want)
		}
	}
}

func TestSampleCell(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\nb", "a⏎b"},
		{"x|y", `x\|y`},
		{"<script>", "&lt;script&gt;"},
		{"**bold** `code` [l](u) # h _i_", `\*\*bold\*\* \` + "`" + `code\` + "`" + ` \[l\](u) \# h \_i\_`},
		{strings.Repeat("é", 250), strings.Repeat("é", 200) + "…"},
	} {
		if got := sampleCell(c.in); got != c.want {
			t.Errorf("sampleCell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWriteGenerations(t *testing.T) {
	var b strings.Builder
	if n := writeGenerations(&b, nil, "", 0); n != 0 || !strings.Contains(b.String(), "No samples were recorded") {
		t.Errorf("no generations: %d, %q", n, b.String())
	}
	b.Reset()
	gens := []runlog.Generation{
		{Step: 20, Prompt: "", Mode: runlog.ModeGreedy, Weights: "raw", Seed: 1, Tokens: 8, Text: "abc"},
		{Step: 20, Prompt: "", Mode: runlog.ModeSampled, Weights: "raw", Temperature: 0.8, TopK: 40, Seed: 1, Tokens: 8, Text: "xyz"},
		{Step: 40, Prompt: "", Mode: runlog.ModeGreedy, Weights: "raw", Seed: 1, Tokens: 8, Text: "abd"},
	}
	n := writeGenerations(&b, gens, "samples.jsonl:7: bad", 2)
	md := b.String()
	for _, want := range []string{"2 unreadable lines", "samples.jsonl:7", "2 checkpoints", "temperature 0.8, top-k 40, seed 1, 8 tokens", "### Prompt (empty", "| 20 | abc | first checkpoint | 1.00 | xyz |", "| 40 | abd | new after 2 chars (vs step 20) | 1.00 |  |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if n != 2 {
		t.Errorf("%d checkpoints, want 2", n)
	}
}

// TestWriteSurvivesOddSeries: a NaN in a log-scale series and a log-scale
// series of one value (one checkpoint's output_kl_to_prev) used to panic
// inside gonum/plot and take the run down with its report.
func TestWriteSurvivesOddSeries(t *testing.T) {
	dir := t.TempDir()
	writeMetrics(t, dir, 60, 0)
	f, err := os.OpenFile(filepath.Join(dir, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"step":61,"tokens_seen":249856,"train_loss_raw":"NaN","grad_global_norm":"NaN","update_norm":"NaN"}` + "\n")
	f.WriteString(`{"step":61,"event":"checkpoint","output_kl_to_prev":0.02}` + "\n")
	f.Close()
	sum, err := Write(Input{RunDir: dir, UnigramLoss: math.NaN()})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.PlotErrors) > 0 {
		t.Errorf("plots failed: %v", sum.PlotErrors)
	}
	for _, p := range []string{"norms.png", "probe_kl.png"} {
		if !slices.Contains(sum.Plots, p) {
			t.Errorf("%s not drawn (plots %v)", p, sum.Plots)
		}
	}
}

// TestWriteOnlyItsOwnReportDir: report/ is written when absent, empty or
// kestrel's, and refused when it is a file, a link or holds other files.
func TestWriteOnlyItsOwnReportDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(rep string) error
		ok    bool
	}{
		{"absent", func(string) error { return nil }, true},
		{"empty", func(rep string) error { return os.Mkdir(rep, 0o755) }, true},
		{"an earlier report", func(rep string) error {
			if err := os.Mkdir(rep, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(rep, "report.md"), []byte("old"), 0o644)
		}, true},
		{"a file", func(rep string) error { return os.WriteFile(rep, []byte("notes"), 0o644) }, false},
		{"a link", func(rep string) error { return os.Symlink(os.TempDir(), rep) }, false},
		{"other files", func(rep string) error {
			if err := os.Mkdir(rep, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(rep, "thesis.tex"), []byte("x"), 0o644)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeMetrics(t, dir, 30, 0)
			rep := filepath.Join(dir, "report")
			if err := c.setup(rep); err != nil {
				t.Fatal(err)
			}
			_, err := Write(Input{RunDir: dir, UnigramLoss: math.NaN()})
			if c.ok != (err == nil) {
				t.Fatalf("Write: %v, want ok %v", err, c.ok)
			}
			if !c.ok && !strings.Contains(err.Error(), rep) {
				t.Errorf("the refusal does not name %s: %v", rep, err)
			}
		})
	}
}
