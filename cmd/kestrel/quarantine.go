package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/internal/replay"
)

func newQuarantineCmd() *cobra.Command {
	var req replay.QuarantineRequest
	cmd := &cobra.Command{
		Use:   "quarantine DATASET (--docs ID,… | --shards FILE,… | --from-replay REPLAY.json) --reason TEXT",
		Short: "leave documents or shards of a prepared dataset out of training, through an overlay",
		Long:  helpText("quarantine"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if req.Dataset, err = flagx.DataPath(args[0]); err != nil {
				return err
			}
			path, added, total, err := replay.Quarantine(req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d entries added, %d in all\n", path, added, total)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&req.Docs, "docs", nil, "document ids to quarantine (none empty)")
	f.StringSliceVar(&req.Shards, "shards", nil, "shard files to quarantine (as in the dataset manifest, or base names)")
	f.StringVar(&req.FromReplay, "from-replay", "", "quarantine every document of the steps in this kestrel replay --json output")
	f.StringVar(&req.Source, "source", "", "only documents of this source")
	f.StringVar(&req.Reason, "reason", "", "why (recorded with every entry; required)")
	return cmd
}
