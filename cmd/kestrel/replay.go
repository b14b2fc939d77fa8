package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/replay"
)

func newReplayCmd() *cobra.Command {
	var o replay.Options
	var steps string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replay RUN [--checkpoint C] [--probe] [--steps A:B [--decode]] [--json]",
		Short: "re-measure a run's probe batch or its batches of some steps on one checkpoint, changing nothing",
		Long:  helpText("replay"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.From, o.To, err = flagx.StepRange("--steps", steps); err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
			res, err := replay.Replay(args[0], o)
			if err != nil {
				return err
			}
			if asJSON {
				return res.WriteJSON(cmd.OutOrStdout())
			}
			return show.Replay(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Checkpoint, "checkpoint", "", "checkpoint whose weights are used: a directory, step-N, last or last-good (default: last for --probe, the newest before A for --steps)")
	f.BoolVar(&o.Probe, "probe", false, "measure the frozen probe batch")
	f.StringVar(&steps, "steps", "", "replay the batches of steps A:B (inclusive, metrics steps)")
	f.StringVar(&o.Quarantine, "quarantine", "", "override data.quarantine for the rebuilt batches (none = as before any quarantine)")
	f.BoolVar(&o.Decode, "decode", false, "print each row of the replayed batches as text (the run's tokenizer), beside its source and document ids")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}
