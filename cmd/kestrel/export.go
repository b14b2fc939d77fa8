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
		Use:   "export --run RUN [--checkpoint last|last-good|step-N|DIR] [--ema] --hf DIR [--force]",
		Short: "write a run's checkpoint as a Hugging Face Llama/Qwen3 directory",
		Long: `Write a checkpoint of a run as a directory Hugging Face loaders accept as is:
config.json (LlamaForCausalLM, or Qwen3ForCausalLM with QK-Norm; bos/eos ids
from the run's tokenizer and document separator), model.safetensors (float32),
tokenizer.json, tokenizer_config.json, special_tokens_map.json,
generation_config.json and a README.md model card (data mixture, tokens,
final validation loss, bits per byte and benchmark scores when recorded,
manifest hash). Byte-level runs ship a byte-level tokenizer.json (id = byte).
A model HF cannot express (NoPE layers, mixture-of-experts) is refused unless
--force. See docs/export.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Run == "" || o.Out == "" {
				return fmt.Errorf("export: --run and --hf are required")
			}
			o.Log = slog.Default()
			res, err := hfrun.Export(cmd.Context(), o)
			if err != nil {
				return err
			}
			eos := "none (byte-level)"
			if res.Tokens.EOS != nil {
				eos = fmt.Sprintf("%q = %d", res.Tokens.EOS.Content, res.Tokens.EOS.ID)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %s (step %d) as %s to %s; eos %s\n", res.Checkpoint, res.Step, res.Arch, o.Out, eos)
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
	f.StringVar(&o.Out, "hf", "", "Hugging Face directory to write (replaced if it holds an earlier export)")
	f.BoolVar(&o.Force, "force", false, "write a model Hugging Face cannot express (NoPE, MoE) anyway")
	return cmd
}
