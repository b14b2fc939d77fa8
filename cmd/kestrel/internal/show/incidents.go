package show

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Incidents prints a run's incidents as JSON lines, or as a table for a
// person. readErr is run.Incidents' error: any error but skipped bad
// lines is returned before anything is printed; skipped lines are
// returned after the list, saying how many, so the list is never taken
// for the whole record.
func Incidents(w io.Writer, runDir string, list []run.Incident, readErr error, asJSON bool) error {
	if readErr != nil && runlog.SkippedLines(readErr) == 0 {
		return fmt.Errorf("incidents: %w", readErr)
	}
	if err := incidents(w, runDir, list, asJSON); err != nil {
		return err
	}
	if readErr != nil {
		return fmt.Errorf("incidents: listed from the readable alerts only: %w", readErr)
	}
	return nil
}

func incidents(w io.Writer, runDir string, list []run.Incident, asJSON bool) error {
	if asJSON {
		return incidentsJSON(w, list)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintf(w, "%s: no model incidents\n", runDir)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tsteps\tseverity\trules\tstate")
	for _, in := range list {
		fmt.Fprintf(tw, "%s\t%d-%d\t%s\t%s\t%s\n", in.ID, in.FromStep, in.ToStep, in.Worst, strings.Join(in.Rules, ","), in.State)
	}
	return tw.Flush()
}

func incidentsJSON(w io.Writer, list []run.Incident) error {
	enc := json.NewEncoder(w)
	for i := range list {
		if err := enc.Encode(&list[i]); err != nil {
			return fmt.Errorf("incidents: %w", err)
		}
	}
	return nil
}
