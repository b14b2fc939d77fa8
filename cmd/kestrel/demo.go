package main

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/configs"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
	"github.com/kestrel-lm/kestrel/internal/report"
	"github.com/kestrel-lm/kestrel/internal/run"
)

func newDemoCmd() *cobra.Command {
	var (
		quick, dash, forcePrep bool
		dataOut, runOut        string
	)
	cmd := &cobra.Command{
		Use:   "demo [--quick] [--dash]",
		Short: "run the whole pipeline on the shipped data and write a run report",
		Long: `Run the whole kestrel pipeline on the shipped data with the embedded configs
(configs/data-demo.toml and configs/demo.toml):

  1. prepare   mixed corpus (web, books, wiki, math, code) → filters → dedup →
               decontamination against GSM8K test / HellaSwag / PIQA → BPE
               tokenizer (vocab 8192) → shards                    (datasets/demo)
  2. train     a small Llama-style model with QK-Norm, z-loss, WSD, update
               clipping, skip-step and EMA, switching to a cooldown mix for
               the decay, with the monitor on                       (runs/demo)
  3. report    runs/demo/report/report.md with plots, alerts, data report,
               samples at several temperatures and the run manifest

Interrupt it (Ctrl-C) and run it again to continue where it stopped: a
prepared dataset whose fingerprint matches is reused and training resumes from
its checkpoint. --quick runs a small version in a couple of minutes (make test
runs it as a smoke test).`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "extra config overlaid on the embedded demo configs (optional)")
	cmd.Flags().BoolVar(&quick, "quick", false, "small, fast version (smoke test, a few minutes)")
	cmd.Flags().BoolVar(&dash, "dash", false, "serve the live dashboard while training")
	cmd.Flags().BoolVar(&forcePrep, "force-prepare", false, "rebuild the dataset even when it is up to date")
	cmd.Flags().StringVar(&dataOut, "data-out", "", "dataset directory (default datasets/demo, or datasets/demo-quick with --quick)")
	cmd.Flags().StringVar(&runOut, "out", "", "run directory (default runs/demo, or runs/demo-quick with --quick)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		name := "demo"
		if quick {
			name = "demo-quick"
		}
		if dataOut == "" {
			dataOut = filepath.Join("datasets", name)
		}
		if runOut == "" {
			runOut = filepath.Join("runs", name)
		}
		cfg, err := demoConfig(quick, cf)
		if err != nil {
			return err
		}
		cfg.Run.Name = name
		cfg.Data.Path = dataOut
		return runDemo(cmd, cfg, demoPaths{data: dataOut, run: runOut}, dash, forcePrep)
	}
	return cmd
}

type demoPaths struct{ data, run string }

// demoConfig layers defaults ← data-demo.toml ← demo.toml (← demo-quick.toml)
// ← --config ← --section.key flags.
func demoConfig(quick bool, cf *configFlags) (config.Config, error) {
	cfg := config.Default()
	files := []string{"data-demo.toml", "demo.toml"}
	if quick {
		files = append(files, "demo-quick.toml")
	}
	for _, f := range files {
		b, err := configs.Read(f)
		if err != nil {
			return cfg, err
		}
		if err := config.Decode(b, "configs/"+f, &cfg); err != nil {
			return cfg, err
		}
	}
	if cf.path != "" {
		b, err := os.ReadFile(cf.path)
		if err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
		if err := config.Decode(b, cf.path, &cfg); err != nil {
			return cfg, err
		}
	}
	for _, o := range cf.overrides {
		if err := o.Apply(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func runDemo(cmd *cobra.Command, cfg config.Config, p demoPaths, dash, forcePrep bool) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	t0 := time.Now()
	step := func(n int, what string) { fmt.Fprintf(out, "\n== [%d/4] %s\n", n, what) }

	// 1. Data.
	step(1, "prepare the mixed corpus → "+p.data)
	upToDate, err := prepare.UpToDate(cfg.Prepare, p.data, false)
	if err != nil {
		return fmt.Errorf("demo: prepare: %w", err)
	}
	if upToDate && !forcePrep {
		fmt.Fprintf(out, "dataset %s is up to date (same config and inputs): reused\n", p.data)
	} else if _, err := prepare.Run(ctx, cfg.Prepare, prepare.RunOptions{
		Out: p.data, Force: forcePrep, Summary: out, Progress: os.Stderr, Log: slog.Default(),
	}); err != nil {
		return fmt.Errorf("demo: prepare: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("demo: interrupted during prepare; run it again to continue")
	}
	unigram, err := report.UnigramBaseline(p.data)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(out, "unigram baseline of the data: %.3f nats/token (a model must beat this to use context)\n", unigram)

	// 2. Training (resumes when runs/<name> has a checkpoint).
	step(2, "train → "+p.run)
	fmt.Fprintf(out, "watch it live: kestrel dash %s   (or rerun with --dash)\n", p.run)
	res, err := run.Train(ctx, cfg, p.run, run.Options{Dash: dash, Stdout: out, Stderr: cmd.ErrOrStderr()})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if res.Interrupted {
		return fmt.Errorf("demo: interrupted at step %d; run the same command again to continue", res.Step)
	}

	// 3. Samples and report.
	step(3, "sample and write the report")
	var samples []report.Sample
	for _, s := range demoSamplePrompts {
		for _, temp := range []float64{0.6, 1.0} {
			text, err := generate(p.run, genOptions{prompt: s, temperature: temp, topK: 50, topP: 1, tokens: 60, ema: true, seed: 1})
			if err != nil {
				return fmt.Errorf("demo: sample: %w", err)
			}
			samples = append(samples, report.Sample{Prompt: s, Temperature: temp, TopK: 50, EMA: true, Text: strings.TrimPrefix(text, s)})
		}
	}
	sum, err := report.Write(report.Input{RunDir: p.run, DatasetDir: p.data, Samples: samples, UnigramLoss: unigram, Title: cfg.Run.Name})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}

	// 4. Where everything is.
	step(4, "done in "+time.Since(t0).Round(time.Second).String())
	printDemoSummary(out, sum, p)
	if !sum.Healthy {
		slog.Warn("demo: the report flags problems; read it", "report", sum.Path)
	}
	return nil
}

// demoSamplePrompts start the report's samples: one per kind of data.
var demoSamplePrompts = []string{"ROMEO:", "The city of", "Natalia sold clips to"}

func printDemoSummary(out io.Writer, sum *report.Summary, p demoPaths) {
	fmt.Fprintf(out, "verdict: %s\n", map[bool]string{true: "healthy", false: "needs a look"}[sum.Healthy])
	for _, v := range sum.Verdicts {
		fmt.Fprintf(out, "  %s\n", v)
	}
	if !math.IsNaN(sum.FinalVal) {
		fmt.Fprintf(out, "held-out loss %.3f (EMA weights %.3f) vs unigram baseline %.3f nats/token\n", sum.FinalVal, sum.FinalValEMA, sum.Unigram)
	}
	fmt.Fprintf(out, `
dataset   %[1]s   (report.json, rejects/, shards/, manifest.json)
run       %[2]s   (metrics.jsonl, metrics.sqlite, alerts.jsonl, trace.json, checkpoints/)
report    %[3]s

look further:
`, p.data, p.run, sum.Path)
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	for _, l := range [][2]string{
		{"kestrel dash " + p.run, "live panel in the browser"},
		{"kestrel data inspect " + p.data + " --n 2", "decode sample documents back to text"},
		{"kestrel sample --run " + p.run + ` --prompt "ROMEO:" --ema`, "generate text with the EMA weights"},
		{"kestrel watch " + p.run, "the alert rules over the run's metrics"},
	} {
		fmt.Fprintf(tw, "  %s\t%s\n", l[0], l[1])
	}
	tw.Flush()
}
