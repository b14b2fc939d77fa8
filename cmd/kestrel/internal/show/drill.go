package show

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kestrel-lm/kestrel/internal/drill"
)

// Drill prints the report as one JSON object, or as the table.
func Drill(w io.Writer, rep *drill.Report, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	return DrillTable(w, rep)
}

// DrillRow is the row in one line, for progress as the branches end.
func DrillRow(r drill.Row) string {
	if r.NA != "" {
		return fmt.Sprintf("%s at %s: n/a (%s)", r.Fault, r.Moment, r.NA)
	}
	s := fmt.Sprintf("%s at %s", r.Fault, r.Moment)
	if r.Detected {
		s += fmt.Sprintf(": %s %s after %d steps", r.Severity, r.Rule, r.Latency)
	}
	if len(r.FalseAlarms) > 0 {
		s += ", false alarms " + strings.Join(r.FalseAlarms, ",")
	}
	if r.LastGood >= 0 {
		s += fmt.Sprintf(", back to step %d", r.LastGood)
	}
	s += ", " + r.Outcome
	if r.Finished {
		s += fmt.Sprintf(", val %.4f (%+.2f%% vs clean)", r.FinalVal, r.DeltaPct)
	}
	return s
}

// DrillTable prints the report for a person: one row per branch.
func DrillTable(w io.Writer, rep *drill.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "fault\tmoment\tstep\tdetected\tlatency\tfalse alarms\tlast-good\toutcome\tfinal val\tclean val\tΔ")
	for _, r := range rep.Rows {
		if r.NA != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\tn/a (%s)\t\t\t\t\t\t\t\n", r.Fault, r.Moment, r.NA)
			continue
		}
		det, lat := "-", "-"
		if r.Detected {
			det, lat = r.Severity+" "+r.Rule, fmt.Sprint(r.Latency)
		} else if r.Fault != "none" {
			det = "NO"
		}
		lg := "-"
		if r.LastGood >= 0 {
			lg = fmt.Sprintf("%d (%s)", r.LastGood, map[bool]string{true: "before the fault", false: "AFTER the fault"}[r.LastGoodOK])
		}
		fa := fmt.Sprint(len(r.FalseAlarms))
		if len(r.FalseAlarms) > 0 {
			fa += " " + strings.Join(r.FalseAlarms, ",")
		}
		final, delta := "-", "-"
		if r.Finished {
			final, delta = fmt.Sprintf("%.4f", r.FinalVal), fmt.Sprintf("%+.2f%%", r.DeltaPct)
		}
		step := "-"
		if r.FaultStep > 0 {
			step = fmt.Sprint(r.FaultStep)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.4f\t%s\n", r.Fault, r.Moment, step, det, lat, fa, lg, r.Outcome, final, r.CleanVal, delta)
	}
	return tw.Flush()
}
