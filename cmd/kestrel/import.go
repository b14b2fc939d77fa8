package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/hfrun"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

func newImportCmd() *cobra.Command {
	var dir, out string
	cmd := &cobra.Command{
		Use:   "import --hf DIR --out RUN.toml [--config BASE.toml]",
		Short: "check a Hugging Face Llama/Qwen3 directory and write a run config that warm-starts from it",
		Long: `Read a Hugging Face Llama or Qwen3 directory (config.json and model.safetensors,
or shards listed in model.safetensors.index.json; F32, BF16 or F16, converted
to float32), map every tensor to kestrel's and check its shape, then write
RUN.toml: --config (or the defaults) with [model] from config.json and
init.from = "hf:DIR", init.mode = "weights". 'kestrel train --config RUN.toml'
then warm-starts with the usual report. init.from = "hf:DIR" works in any
config too. See docs/export.md.`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "base config file (default: the built-in defaults)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if dir == "" || out == "" {
			return fmt.Errorf("import: --hf and --out are required")
		}
		cfg, m, err := hfrun.Import(dir, cf.path, cf.overrides)
		if err != nil {
			return err
		}
		if err := config.WriteFile(out, cfg); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "%s: %s, %d tensors mapped and shape-checked", dir, m.HF.Architectures[0], len(m.Weights.Tensors))
		for _, dt := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F64} {
			if n := m.Converted[dt]; n > 0 {
				fmt.Fprintf(w, ", %d converted from %s", n, dt)
			}
		}
		if len(m.Ignored) > 0 {
			fmt.Fprintf(w, ", ignored %v", m.Ignored)
		}
		fmt.Fprintf(w, "\nwrote %s (init.from = %q); train with: kestrel train --config %s\n", out, cfg.Init.From, out)
		return nil
	}
	cmd.Flags().StringVar(&dir, "hf", "", "Hugging Face model directory")
	cmd.Flags().StringVar(&out, "out", "", "run config file to write")
	return cmd
}
