package main

import (
	"fmt"

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
				for i := range list {
					if err := printJSON(out, &list[i]); err != nil {
						return fmt.Errorf("checkpoints: step %d: %w", list[i].Step, err)
					}
				}
				return nil
			}
			return train.WriteCheckpointTable(out, args[0], list)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per checkpoint, one per line")
	return cmd
}
