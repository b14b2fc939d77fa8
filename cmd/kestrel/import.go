package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/hfrun"
)

func newImportCmd() *cobra.Command {
	var dir, out string
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "import --hf DIR --out RUN.toml [--config BASE.toml] [--overwrite]",
		Short: "check a Hugging Face Llama/Qwen3 directory and write a run config that warm-starts from it",
		Long:  helpText("import"),
		Args:  cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "base config file (default: the built-in defaults)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if dir == "" || out == "" {
			return fmt.Errorf("import: --hf and --out are required")
		}
		if err := hfrun.CheckImportOut(out, dir, cf.path, overwrite); err != nil {
			return err
		}
		m, from, err := hfrun.ImportSource(dir)
		if err != nil {
			return err
		}
		cfg, err := config.WarmStartFrom(cf.path, cf.overrides, m.Config, from)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if err := config.WriteFile(out, cfg); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		return show.ImportSummary(cmd.OutOrStdout(), dir, out, cfg.Init.From, m)
	}
	cmd.Flags().StringVar(&dir, "hf", "", "Hugging Face model directory")
	cmd.Flags().StringVar(&out, "out", "", "run config file to write (an existing one only if kestrel wrote it; never a file of --hf or --config)")
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "replace an existing --out that kestrel did not write")
	return cmd
}
