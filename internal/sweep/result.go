package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Result is what one point's run directory says after the sweep.
type Result struct {
	Name        string
	Dir         string
	LastStep    int     // the last step in metrics.jsonl
	FinalVal    float64 // val_loss of the last evaluation (NaN: none)
	BestVal     float64 // the lowest val_loss of any evaluation (NaN: none)
	BestStep    int     // the step of BestVal
	Alerts      map[runlog.Severity]int
	Interrupted bool  // stopped by Ctrl-C before its last step
	Err         error // the run's error, or a read error of its files
}

// Read reads a run directory's evaluations and alerts into a Result.
func Read(dir string) Result {
	r := Result{Dir: dir, FinalVal: math.NaN(), BestVal: math.NaN(), Alerts: map[runlog.Severity]int{}}
	l := rundir.Of(dir)
	f, err := os.Open(l.Metrics())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.Err = fmt.Errorf("sweep: %w", err)
		}
		return r
	}
	defer f.Close()
	_, err = runlog.EachLine(f, func(line []byte) {
		var rec struct {
			Step    *int     `json:"step"`
			Event   string   `json:"event"`
			ValLoss *float64 `json:"val_loss"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.Step == nil || rec.Event != "" {
			return
		}
		r.LastStep = max(r.LastStep, *rec.Step)
		if rec.ValLoss == nil {
			return
		}
		r.FinalVal = *rec.ValLoss
		if math.IsNaN(r.BestVal) || *rec.ValLoss < r.BestVal {
			r.BestVal, r.BestStep = *rec.ValLoss, *rec.Step
		}
	})
	if err != nil {
		r.Err = fmt.Errorf("sweep: %s: %w", l.Metrics(), err)
		return r
	}
	alerts, err := runlog.ReadAlerts(l.Alerts())
	var skipped *runlog.SkippedLinesError
	if err != nil && !errors.As(err, &skipped) {
		r.Err = fmt.Errorf("sweep: %w", err)
	}
	for _, a := range alerts {
		r.Alerts[a.Severity]++
	}
	return r
}

// Status is a result's one-word outcome: done, interrupted or failed.
func (r Result) Status() string {
	switch {
	case r.Err != nil:
		return "failed"
	case r.Interrupted:
		return "interrupted"
	}
	return "done"
}

// alertText is "none" or the counts by severity, e.g. "SEV1 1, SEV2 3".
func (r Result) alertText() string {
	var parts []string
	for _, s := range []runlog.Severity{runlog.SEV0, runlog.SEV1, runlog.SEV2} {
		if n := r.Alerts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// WriteTable prints the results as an aligned table, best final val first
// marked with *, and each failed run's error below it.
func WriteTable(w io.Writer, rs []Result) error {
	best := -1
	for i, r := range rs {
		if !math.IsNaN(r.FinalVal) && (best < 0 || r.FinalVal < rs[best].FinalVal) {
			best = i
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tsteps\tfinal val\tbest val (step)\talerts\tstatus\t")
	for i, r := range rs {
		mark := ""
		if i == best {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%s\t%s\t%s\t%s\t\n", r.Name, mark, r.LastStep, num(r.FinalVal),
			bestText(r), r.alertText(), r.Status())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			if _, err := fmt.Fprintf(w, "%s: %v\n", r.Name, r.Err); err != nil {
				return err
			}
		}
	}
	return nil
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.4f", x)
}

func bestText(r Result) string {
	if math.IsNaN(r.BestVal) {
		return "-"
	}
	return fmt.Sprintf("%.4f (%d)", r.BestVal, r.BestStep)
}

// Failed is nil when no run failed, else an error counting the failed runs
// (kestrel sweep exits non-zero with it, after the table).
func Failed(rs []Result) error {
	var names []string
	for _, r := range rs {
		if r.Err != nil {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("sweep: %d of %d runs failed: %s", len(names), len(rs), strings.Join(names, ", "))
}
