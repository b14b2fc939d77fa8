package main

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/run"
)

func newTrainCmd() *cobra.Command {
	var out string
	var fresh, dash bool
	cmd := &cobra.Command{
		Use:   "train --config RUN.toml --out runs/NAME",
		Short: "train a transformer; resumes from the newest valid checkpoint in --out",
		Long:  helpText("train"),
		Args:  cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML)")
	cmd.Flags().StringVar(&out, "out", "", "run directory (default runs/<run.name>)")
	cmd.Flags().BoolVar(&fresh, "fresh", false, "refuse to touch an existing run directory instead of resuming")
	cmd.Flags().BoolVar(&dash, "dash", false, "serve the live dashboard for this run beside training (at dash.addr)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		if out == "" {
			out = filepath.Join("runs", cfg.Run.Name)
		}
		// bin/kestrel-mpi under mpirun or srun: one rank of a data-parallel
		// run (docs/distributed.md); otherwise a single process.
		c, err := comm.FromEnv()
		if err != nil {
			return err
		}
		_, err = run.Train(cmd.Context(), cfg, out, run.Options{Fresh: fresh, Dash: dash, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Comm: c})
		return flagx.EndRank(c, err, cmd.ErrOrStderr())
	}
	return cmd
}
