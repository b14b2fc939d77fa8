package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/hfrun"
)

func newExportCmd() *cobra.Command {
	var o hfrun.Options
	cmd := &cobra.Command{
		Use:   "export --run RUN [--checkpoint last|last-good|step-N|DIR] [--ema] --hf DIR [--dtype fp32|bf16] [--force] [--overwrite]",
		Short: "write a run's checkpoint as a Hugging Face Llama/Qwen3 directory",
		Long:  helpText("export"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Run == "" || o.Out == "" {
				return fmt.Errorf("export: --run and --hf are required")
			}
			o.Log = slog.Default()
			res, err := hfrun.Export(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Line(o.Out))
			if res.Refused != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: --force: %s\n", res.Refused)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Run, "run", "", "run directory")
	f.StringVar(&o.Checkpoint, "checkpoint", "last", "last | last-good | step-N | a checkpoint directory")
	f.BoolVar(&o.EMA, "ema", false, "export the EMA weights")
	f.StringVar(&o.Out, "hf", "", "Hugging Face directory to write (replaced only if it holds an earlier export: its kestrel-export.json)")
	f.BoolVar(&o.Force, "force", false, "write a model Hugging Face cannot express (NoPE, MoE) anyway")
	f.StringVar(&o.DType, "dtype", "fp32", "weights' dtype in model.safetensors: fp32 (F32) or bf16 (BF16, rounded to nearest even; torch_dtype \"bfloat16\")")
	f.BoolVar(&o.Overwrite, "overwrite", false, "replace an existing --hf directory that is not an earlier export (never a file or a symbolic link)")
	return cmd
}
