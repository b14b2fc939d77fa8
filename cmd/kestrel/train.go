package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/train"
)

func newTrainCmd() *cobra.Command {
	var out string
	var fresh, dash bool
	cmd := &cobra.Command{
		Use:   "train --config RUN.toml --out runs/NAME",
		Short: "train a transformer; resumes from the newest valid checkpoint in --out",
		Long: `Train a Llama/Qwen3-style transformer on a byte-level text file or a prepared
dataset, with AdamW, LR schedules (cosine, WSD, WSD-S, multi-step, re-warmup),
gradient and update-norm clipping, skip-bad-steps, z-loss, EMA weights, and
checkpoints with bit-exact resume. If --out already holds a checkpoint the run
resumes from the newest valid one; Ctrl-C writes a checkpoint and exits 0.
Every step appends a JSON line to <out>/metrics.jsonl; the monitor (ICU panel)
watches every step, writes alerts.jsonl, metrics.sqlite, TensorBoard events and
trace.json, and stops the run on a SEV0 with an incident bundle under
<out>/incidents/. --dash serves the live dashboard beside the run.`,
		Args: cobra.NoArgs,
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
		_, err = runTraining(cmd.Context(), cfg, out, trainRunOptions{fresh: fresh, dash: dash, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()})
		return err
	}
	return cmd
}

// trainRunOptions are the command-line choices around one training run.
type trainRunOptions struct {
	fresh, dash    bool
	stdout, stderr io.Writer
}

// runTraining trains (or resumes) the run in out with the monitor attached
// and, with dash, the dashboard serving it. kestrel train and kestrel demo
// both use it.
func runTraining(ctx context.Context, cfg config.Config, out string, ro trainRunOptions) (*train.Result, error) {
	opts, err := trainOptions(cfg, out)
	if err != nil {
		return nil, err
	}
	if ro.fresh {
		// Refuse here, before the monitor creates files in the directory
		// (train.Run would otherwise see the directory the monitor made).
		if _, err := os.Stat(out); err == nil {
			return nil, fmt.Errorf("train: --fresh: run directory %s already exists; choose another --out or remove it", out)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	tm, err := newTrainMonitor(cfg, out, opts.Logger)
	if err != nil {
		return nil, err
	}
	if l, ok := opts.Data.(*loader.Loader); ok {
		tm.batch = loaderBatches(l)
	}
	opts.Observers = append(opts.Observers, tm)
	if ro.dash {
		stop, err := startDash(ctx, cfg.Dash.Addr, out, ro.stdout)
		if err != nil {
			_ = tm.Finish(nil)
			return nil, err
		}
		defer stop()
	}
	start := time.Now()
	res, err := train.Run(ctx, opts)
	err = tm.Finish(err)
	if err != nil {
		return res, fmt.Errorf("train %s: %w", out, err)
	}
	wall := time.Since(start).Round(time.Second)
	switch {
	case res.TimeLimited:
		fmt.Fprintf(ro.stdout, "time limit (train.max_minutes = %g) reached at step %d of %d: final eval val_loss %.4f, checkpoint %s; rerun the same command to continue\n", cfg.Train.MaxMinutes, res.Step, cfg.Train.Steps, res.ValLoss, res.Checkpoint)
	case res.Interrupted:
		fmt.Fprintf(ro.stderr, "interrupted at step %d; checkpoint %s written; rerun the same command to resume\n", res.Step, res.Checkpoint)
	case math.IsNaN(res.ValLoss): // resumed a finished run: nothing evaluated
		fmt.Fprintf(ro.stdout, "done: the run was already at step %d (train.steps); nothing to train, run %s\n", res.Step, out)
	default:
		fmt.Fprintf(ro.stdout, "done: step %d, val_loss %.4f, val_loss_ema %.4f, wall %s, run %s\n", res.Step, res.ValLoss, res.ValLossEMA, wall, out)
	}
	return res, nil
}

// trainOptions assembles the trainer's options from the resolved config.
// The monitor (and other observers) attach through opts.Observers.
func trainOptions(cfg config.Config, out string) (train.Options, error) {
	hash, err := config.Hash(cfg)
	if err != nil {
		return train.Options{}, err
	}
	opts := train.Options{
		Dir:        out,
		Seed:       cfg.Run.Seed,
		Model:      cfg.Model,
		Optim:      cfg.Optim,
		Train:      cfg.Train,
		Checkpoint: cfg.Checkpoint,
		Init:       cfg.Init,
		Debug:      cfg.Debug,
		ConfigHash: hash,
		WriteConfig: func(path string) error {
			return config.WriteFile(path, cfg)
		},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	if opts.Init.From != "" {
		if opts.Init.From, err = datadir.Expand(opts.Init.From); err != nil {
			return opts, fmt.Errorf("init.from: %w", err)
		}
	}
	switch cfg.Data.Kind {
	case "bytes":
		if cfg.Model.Vocab < 256 {
			return opts, fmt.Errorf("data.kind = \"bytes\" needs model.vocab >= 256, got %d", cfg.Model.Vocab)
		}
		tr, err := datadir.Expand(cfg.Data.Train)
		if err != nil {
			return opts, fmt.Errorf("data.train: %w", err)
		}
		va := cfg.Data.Val
		if va != "" {
			if va, err = datadir.Expand(va); err != nil {
				return opts, fmt.Errorf("data.val: %w", err)
			}
		}
		src, err := train.OpenBytes(tr, va, cfg.Train.ValFraction, cfg.Model.SeqLen, cfg.Run.Seed)
		if err != nil {
			return opts, err
		}
		opts.Data = src
		opts.Tokenizer = "bytes"
		opts.DataInfo = map[string]any{"kind": "bytes", "train": tr, "val": va, "val_fraction": cfg.Train.ValFraction,
			"train_bytes": src.TrainBytes(), "val_bytes": src.ValBytes()}
	case "dataset":
		src, err := openDatasetSource(cfg)
		if err != nil {
			return opts, err
		}
		opts.Data = src
		opts.Tokenizer = cfg.Data.Path
		opts.DataInfo = map[string]any{"kind": "dataset", "path": cfg.Data.Path}
	default:
		return opts, fmt.Errorf("data.kind: unknown kind %q (want bytes or dataset)", cfg.Data.Kind)
	}
	return opts, nil
}
