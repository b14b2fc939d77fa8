package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/config"
)

// configFlags binds --config and one --section.key flag per config field.
type configFlags struct {
	path      string
	overrides []config.Override
}

// addConfigFlags registers --config (with the given usage) and every config
// field as a hidden --section.key flag on cmd.
func addConfigFlags(cmd *cobra.Command, usage string) *configFlags {
	cf := &configFlags{}
	cmd.Flags().StringVar(&cf.path, "config", "", usage)
	for _, f := range config.Fields() {
		help := f.Comment
		if help == "" {
			help = "config field " + f.Path
		}
		cmd.Flags().Var(&config.OverrideFlag{Path: f.Path, Dst: &cf.overrides}, f.Path, help)
		_ = cmd.Flags().MarkHidden(f.Path)
	}
	note := "\nEvery config field can be overridden as --section.key=value (e.g. --optim.lr=3e-4);\nrun 'kestrel config --defaults' for the full list with documentation."
	if !strings.Contains(cmd.Long, "--section.key") {
		cmd.Long += "\n" + note
	}
	return cf
}

// load resolves defaults + file + flags.
func (cf *configFlags) load() (config.Config, error) {
	cfg, err := config.Load(cf.path, cf.overrides)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}
