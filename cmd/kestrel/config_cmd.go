package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/config"
)

func newConfigCmd() *cobra.Command {
	var defaults, fields bool
	cmd := &cobra.Command{
		Use:   "config [--defaults | --config FILE [--section.key=value …]]",
		Short: "print the default or resolved configuration",
		Long: `Print a kestrel configuration as TOML with a comment above every field.

  kestrel config --defaults            the complete default config
  kestrel config --config RUN.toml     defaults + RUN.toml + flag overrides, as a run would use it
  kestrel config --fields              one line per settable field: --section.key  type  documentation

Config files are strict: an unknown or misspelt key is an error that names the
key, the file and the line.`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "config file to resolve (TOML)")
	cmd.Flags().BoolVar(&defaults, "defaults", false, "print the complete default config")
	cmd.Flags().BoolVar(&fields, "fields", false, "list every field as a --section.key flag with its type and documentation")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		out := cmd.OutOrStdout()
		if fields {
			for _, f := range config.Fields() {
				fmt.Fprintf(out, "--%-36s %-10s %s\n", f.Path, f.Type.String(), f.Comment)
			}
			return nil
		}
		cfg := config.Default()
		if !defaults {
			var err error
			if cfg, err = cf.load(); err != nil {
				return err
			}
		}
		b, err := config.MarshalDocumented(cfg)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return cmd
}
