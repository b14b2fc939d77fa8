package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/samples"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// reportRun is tinyRun with [samples] kept short.
func reportRun(steps int) config.Config {
	cfg := tinyRun(steps)
	cfg.Samples.Tokens = 16
	return cfg
}

func readGens(t *testing.T, dir string) []runlog.Generation {
	t.Helper()
	gs, skipped, bad, err := runlog.ReadGenerations(dir)
	if err != nil || skipped > 0 {
		t.Fatalf("samples.jsonl: %v, %d skipped (%s)", err, skipped, bad)
	}
	return gs
}

// gensByStep counts the records of each checkpoint step.
func gensByStep(gs []runlog.Generation) map[int]int {
	out := map[int]int{}
	for _, g := range gs {
		out[g.Step]++
	}
	return out
}

func readReport(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTrainWritesReportAndSamples: a run leaves report/report.md with a
// verdict, plots and the samples of every checkpoint (greedy and sampled
// per default byte-level prompt), and samples.jsonl holds one record per
// checkpoint, prompt and mode. A resume adds the new checkpoints' records
// only; `kestrel report` (WriteReport) rebuilds the report.
func TestTrainWritesReportAndSamples(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := reportRun(40)
	var out strings.Builder
	if _, err := Train(context.Background(), cfg, dir, Options{Stdout: &out, Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	per := 2 * len(samples.DefaultPrompts(true))
	if got := gensByStep(readGens(t, dir)); len(got) != 2 || got[20] != per || got[40] != per {
		t.Fatalf("records per checkpoint %v, want %d at steps 20 and 40", got, per)
	}
	md := readReport(t, dir)
	for _, want := range []string{"## Verdict: **", "**Status:** finished at step 40", "![", ".png)", "## Samples", "### Prompt `ROMEO:`", "| 20 |", "| 40 |", "first checkpoint", "step 20", "## Manifest"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "report: "+filepath.Join(dir, "report", "report.md")) {
		t.Errorf("Train did not say where the report is: %q", out.String())
	}

	cfg.Train.Steps = 60 // resume
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	if got := gensByStep(readGens(t, dir)); len(got) != 3 || got[20] != per || got[40] != per || got[60] != per {
		t.Fatalf("after the resume: records per checkpoint %v, want %d at 20, 40, 60", got, per)
	}
	if err := os.Remove(filepath.Join(dir, "report", "report.md")); err != nil {
		t.Fatal(err)
	}
	sum, err := WriteReport(dir, ReportOptions{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Checkpoints != 3 || len(sum.Plots) == 0 {
		t.Errorf("rebuilt report: %d checkpoints of samples, %d plots", sum.Checkpoints, len(sum.Plots))
	}
	if md := readReport(t, dir); !strings.Contains(md, "| 60 |") || !strings.Contains(md, "**Status:** not running") || strings.Contains(md, "live") {
		t.Errorf("rebuilt report lacks step 60 or calls a finished run live:\n%s", md[:min(len(md), 600)])
	}
}

// TestSamplesAfterRewind: a rewind moves the generations of the abandoned
// checkpoints to samples.archive-<id>.jsonl (as their metrics go to
// metrics.archive-<id>.jsonl); the run then records its new trajectory's.
func TestSamplesAfterRewind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := reportRun(40)
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	before := readGens(t, dir)
	iv, err := rewind.Rewind(dir, rewind.Options{To: "20", LRScale: 0.5, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, runlog.SamplesArchiveName(iv.ID)))
	if err != nil {
		t.Fatalf("no samples archive for %s: %v", iv.ID, err)
	}
	arch, _, _ := runlog.ParseGenerations(b, "archive")
	if got := gensByStep(arch); len(got) != 1 || got[40] != len(before)/2 {
		t.Errorf("archive holds %v, want step 40's %d records", got, len(before)/2)
	}
	after := readGens(t, dir)
	if got := gensByStep(after); len(got) != 2 || got[20] != len(before)/2 || got[40] != len(before)/2 {
		t.Fatalf("after the rewind: %v", got)
	}
	if after[len(after)-1].UnixTime <= before[len(before)-1].UnixTime {
		t.Error("step 40's records were not generated again after the rewind")
	}
}

// TestReportOnStop: a run stopped by a SEV0 (NaN) still gets its report,
// saying how it stopped, with a verdict that needs a look.
func TestReportOnStop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := reportRun(40)
	cfg.Debug.NaNAtStep = 30
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err == nil {
		t.Fatal("a NaN did not stop the run")
	}
	md := readReport(t, dir)
	for _, want := range []string{"**Status:** stopped:", "**needs a look**", "| 20 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// TestReportNeverFailsTheRun: a report/ that is not kestrel's (a file)
// is left alone with a warning, and the run succeeds.
func TestReportNeverFailsTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := reportRun(20)
	cfg.Samples.Enabled = false
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "report")); err != nil {
		t.Fatal(err)
	}
	mine := []byte("my notes\n")
	if err := os.WriteFile(filepath.Join(dir, "report"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Train.Steps = 25
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatalf("a report that cannot be written failed the run: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report")); string(b) != string(mine) {
		t.Errorf("the file named report was replaced: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, runlog.SamplesFile)); err == nil {
		t.Error("samples.jsonl written with [samples] off")
	}
}

// TestWriteReportRefusals: WriteReport writes only into a kestrel run
// directory, and only a report/ that is kestrel's; a live run (its lock
// held) is reported read-only, marked live, its lock untouched.
func TestWriteReportRefusals(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if _, err := Train(context.Background(), reportRun(20), run, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	linkRun := filepath.Join(t.TempDir(), "linkrun")
	if err := os.Symlink(run, linkRun); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir, want string }{
		{"not a run", other, "not a kestrel run directory"},
		{"missing", filepath.Join(other, "nope"), "no such file"},
		{"a link", linkRun, "not a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := WriteReport(c.dir, ReportOptions{Logger: quietLog()})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if _, err := os.Stat(filepath.Join(c.dir, "report")); err == nil && c.dir == other {
				t.Error("report/ written into a directory that is not a run")
			}
		})
	}
	// report/ holding someone else's files
	rep := filepath.Join(run, "report")
	if err := os.RemoveAll(rep); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(rep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rep, "thesis.tex"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteReport(run, ReportOptions{Logger: quietLog()}); err == nil || !strings.Contains(err.Error(), "report.md") {
		t.Fatalf("report/ of other files: %v", err)
	}
	if err := os.RemoveAll(rep); err != nil {
		t.Fatal(err)
	}

	// live: a lock held by a running process (this one)
	lk, err := runlock.Acquire(run, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	lockBefore, _ := os.ReadFile(lk.Path())
	if _, err := WriteReport(run, ReportOptions{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	if md := readReport(t, run); !strings.Contains(md, "**Status:** live: a trainer (pid "+fmt.Sprint(os.Getpid())) || !strings.Contains(md, "(live: so far)") {
		t.Errorf("a live run's report does not say live:\n%s", md[:min(len(md), 500)])
	}
	if err := lk.Check(); err != nil {
		t.Errorf("the report disturbed the run's lock: %v", err)
	}
	if after, _ := os.ReadFile(lk.Path()); string(after) != string(lockBefore) {
		t.Errorf("lock file changed: %q → %q", lockBefore, after)
	}
}

func TestEndStatus(t *testing.T) {
	for _, c := range []struct {
		res  *train.Result
		err  error
		want string
	}{
		{&train.Result{Step: 40}, nil, "finished at step 40"},
		{&train.Result{Step: 12, Interrupted: true}, nil, "interrupted (Ctrl-C) at step 12"},
		{&train.Result{Step: 30, TimeLimited: true}, nil, "stopped at the time limit (train.max_minutes) at step 30"},
		{&train.Result{Step: 30}, errors.New("monitor paused the run: SEV0 divergence"), "stopped: monitor paused the run: SEV0 divergence"},
		{nil, errors.New("rescue: ladder stopped"), "stopped: rescue: ladder stopped"},
		{nil, nil, ""},
	} {
		if got := endStatus(c.res, c.err); !strings.HasPrefix(got, c.want) {
			t.Errorf("endStatus(%+v, %v) = %q, want %q…", c.res, c.err, got, c.want)
		}
	}
}
