package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/train"
)

func newCheckpointsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "checkpoints RUN [--json]",
		Short: "list a run's checkpoints with their health, and mark the last-good one",
		Long: `List the checkpoints of a run directory (or of its checkpoints/ directory),
newest first: step, tokens seen, kind (rolling, permanent, final, interrupt,
time_limit), health as stamped in state.json when the checkpoint was written,
the latest evaluation's val_loss and fixed_probe_loss at that time (and the
step of that evaluation), and the size on disk.

Health is "healthy" (no SEV0/SEV1 incident open and train_loss_ema within its
band), "unhealthy: rule@step, …" (the open incidents), or "unknown" (written
with the monitor off, or by an older kestrel). The newest healthy checkpoint
is the last-good one, marked with *; the keep policy never deletes it, nor
the newest checkpoint from before an incident that is still open. Other
commands take a checkpoint as last, last-good, step-N or a directory.

--json prints one JSON object per checkpoint, one per line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := train.ListCheckpoints(args[0])
			if err != nil {
				return fmt.Errorf("checkpoints: %w", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				for i := range list {
					if err := enc.Encode(&list[i]); err != nil {
						return fmt.Errorf("checkpoints: step %d: %w", list[i].Step, err)
					}
				}
				return nil
			}
			if len(list) == 0 {
				fmt.Fprintf(out, "%s: no checkpoints\n", args[0])
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, " \tstep\ttokens\tkind\tval_loss\tprobe_loss\teval_step\tsize\t  health")
			good := false
			for _, c := range list {
				mark := ""
				if c.LastGood {
					mark, good = "*", true
				}
				health := c.Health.Summary()
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
				fmt.Fprintln(out, "* last-good: the newest healthy checkpoint")
			} else {
				fmt.Fprintln(out, "no healthy checkpoint: no last-good")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per checkpoint, one per line")
	return cmd
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
