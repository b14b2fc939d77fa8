package show

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// CheckpointsJSON writes list as JSON lines, one object per checkpoint.
func CheckpointsJSON(out io.Writer, list []checkpoint.Info) error {
	enc := json.NewEncoder(out)
	for i := range list {
		if err := enc.Encode(&list[i]); err != nil {
			return fmt.Errorf("checkpoints: step %d: %w", list[i].Step, err)
		}
	}
	return nil
}

// Checkpoints prints list (as checkpoint.List returns it for the run
// directory runDir) as a table for a person: one row per checkpoint, the
// last-good one marked with *.
func Checkpoints(out io.Writer, runDir string, list []checkpoint.Info) error {
	if len(list) == 0 {
		_, err := fmt.Fprintf(out, "%s: no checkpoints\n", runDir)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, " \tstep\ttokens\tkind\tval_loss\tprobe_loss\teval_step\tsize\t  health")
	good := false
	for _, c := range list {
		mark := ""
		if c.LastGood {
			mark, good = "*", true
		}
		health := checkpointStatus(&c)
		if c.Err != "" {
			health = "unreadable: " + c.Err
		}
		val, probe, evalStep := "-", "-", "-"
		if h := c.Health; h.ValLoss != nil {
			val, evalStep = fmt.Sprintf("%.4f", float64(*h.ValLoss)), fmt.Sprint(h.ValStep)
		}
		if h := c.Health; h.ProbeLoss != nil {
			probe = fmt.Sprintf("%.4f", float64(*h.ProbeLoss))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t  %s\n", mark, c.Step, c.TokensSeen, c.Kind, val, probe, evalStep, byteSize(c.Bytes), health)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if good {
		_, err := fmt.Fprintln(out, "* last-good: the newest confirmed checkpoint (healthy when written, its probe in band, the steps after it clean)")
		return err
	}
	_, err := fmt.Fprintln(out, "no confirmed checkpoint: no last-good")
	return err
}

// checkpointStatus is the health column of the table: the status, and why for
// the ones that are not confirmed.
func checkpointStatus(c *checkpoint.Info) string {
	switch c.Status {
	case checkpoint.Confirmed:
		return "confirmed"
	case checkpoint.StatusPending:
		return "pending (healthy when written; confirmed by the steps up to the next checkpoint)"
	case checkpoint.Rejected:
		return "rejected: " + c.Confirmation.Reason
	}
	return c.Health.Summary()
}

// byteSize prints n bytes in KiB, MiB or GiB.
func byteSize(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}
