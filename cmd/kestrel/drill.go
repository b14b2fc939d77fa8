package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/drill"
)

func newDrillCmd() *cobra.Command {
	var faults, moments []string
	var steps int
	var hog, asJSON bool
	var out string
	cmd := &cobra.Command{
		Use:   "drill --config RUN.toml [--faults …] [--moments …] [--steps N] [--hog] [--json]",
		Short: "fire drills: inject faults into short branches of your config and check the alerts and the rescue",
		Long:  helpText("drill"),
		Args:  cobra.NoArgs,
	}
	cfgf := addConfigFlags(cmd, "the run config to drill (TOML); the branches are it, made short")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cfgf.load()
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		o := drill.Options{Config: cfg, Faults: faults, Moments: moments, Steps: steps, Hog: hog, Dir: out}
		if !asJSON {
			fmt.Fprintf(w, "drill: branches of %d steps; each row is one branch (a fault at a moment)\n", max(steps, 100))
			o.Progress = func(r drill.Row) { fmt.Fprintln(cmd.ErrOrStderr(), progressLine(r)) }
		}
		rep, err := drill.Run(cmd.Context(), o)
		if rep == nil {
			return fmt.Errorf("drill: %w", err)
		}
		if asJSON {
			if jerr := json.NewEncoder(w).Encode(rep); jerr != nil {
				return jerr
			}
		} else if terr := drillTable(w, rep); terr != nil {
			return terr
		}
		if err != nil {
			return fmt.Errorf("drill: %w", err)
		}
		if bad := rep.Failures(); len(bad) > 0 {
			return fmt.Errorf("drill: %d of %d branches missed the mark: %s", len(bad), len(rep.Rows), strings.Join(bad, "; "))
		}
		return nil
	}
	cmd.Flags().StringSliceVar(&faults, "faults", nil, "faults to inject (default all): "+strings.Join(drill.AllFaults, ", "))
	cmd.Flags().StringSliceVar(&moments, "moments", nil, "moments to inject them at (default all): "+strings.Join(drill.AllMoments, ", "))
	cmd.Flags().IntVar(&steps, "steps", 100, "steps of each branch (at least 40)")
	cmd.Flags().BoolVar(&hog, "hog", false, "also run the healthy branch beside a CPU hog (one busy process per core)")
	cmd.Flags().StringVar(&out, "out", "", "keep the branches' run directories here (default: a temporary directory, removed)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	return cmd
}

func progressLine(r drill.Row) string {
	return fmt.Sprintf("drill: %s at %s: %s", r.Fault, r.Moment, r.Outcome)
}

// drillTable prints the report for a person.
func drillTable(w io.Writer, rep *drill.Report) error {
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
