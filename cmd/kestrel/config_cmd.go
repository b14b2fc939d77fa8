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
		Long:  helpText("config"),
		Args:  cobra.NoArgs,
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
