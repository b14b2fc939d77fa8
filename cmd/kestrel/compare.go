package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/branch"
	"github.com/kestrel-lm/kestrel/internal/compare"
)

func newCompareCmd() *cobra.Command {
	var asJSON bool
	var o compare.Options
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B [RUN …] | compare BRANCH",
		Short: "compare runs at equal tokens: losses, evaluations, alerts, config and manifest, and a verdict",
		Long:  helpText("compare"),
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ResolveConfig = branch.ResolvedConfig // defaults filled in, as kestrel train reads config.toml
			r, err := compare.Compare(args, o)
			if err != nil {
				return err
			}
			if asJSON {
				return show.IndentedJSON(cmd.OutOrStdout(), r)
			}
			return show.Compare(cmd.OutOrStdout(), r)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON (the dashboard's /api/compare returns the same)")
	cmd.Flags().IntVar(&o.Window, "window", compare.DefaultWindow, "steps the train loss is averaged over, up to the common tokens")
	return cmd
}
