package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/configs"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/report"
)

// DemoOptions say which demo runs and where it writes.
type DemoOptions struct {
	Quick      bool              // the small version (configs/demo-quick.toml on top)
	ConfigFile string            // an extra config overlaid on the embedded ones ("" = none)
	Overrides  []config.Override // --section.key=value, last
	// Data and Run are the dataset and run directories (default
	// datasets/demo and runs/demo, or …/demo-quick).
	Data, Run    string
	Dash         bool // serve the dashboard while training
	ForcePrepare bool // rebuild the dataset even when it is up to date
	Stdout       io.Writer
	Stderr       io.Writer
	// Prepared hears the report of the dataset the first step built (the
	// command prints it: show.PrepareSummary); nil = none.
	Prepared func(*datareport.Report)
}

// DemoResult is where a finished demo left everything: the dataset, the
// run and its report (kestrel demo prints it: show.DemoSummary).
type DemoResult struct {
	Data, Run string
	Report    *report.Summary
}

// demoTopK is the top-k of the report's samples.
const demoTopK = 50

// demoSamplePrompts start the report's samples: one per kind of data.
var demoSamplePrompts = []string{"ROMEO:", "The city of", "Natalia sold clips to"}

// DemoConfig is kestrel demo's config: defaults ← the embedded
// data-demo.toml ← demo.toml (← demo-quick.toml when quick) ← the file at
// path (optional) ← overrides.
func DemoConfig(quick bool, path string, overrides []config.Override) (config.Config, error) {
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
	if path != "" {
		b, err := config.ReadFile(path)
		if err != nil {
			return cfg, err
		}
		if err := config.Decode(b, path, &cfg); err != nil {
			return cfg, err
		}
	}
	for _, o := range overrides {
		if err := o.Apply(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// Demo runs the whole pipeline with the demo config: prepare the dataset
// (reused when it is up to date), train (resuming when the run has a
// checkpoint), sample, write the run report; it prints its progress and returns where
// everything is (kestrel demo prints that: show.DemoSummary).
// Its outputs follow the output rule: o.Run a new, empty or kestrel run
// directory (CheckRunDir, before anything is prepared), o.Data a new,
// empty or prepared dataset directory (prepare's rule).
func Demo(ctx context.Context, o DemoOptions) (*DemoResult, error) {
	name := "demo"
	if o.Quick {
		name = "demo-quick"
	}
	if o.Data == "" {
		o.Data = filepath.Join("datasets", name)
	}
	if o.Run == "" {
		o.Run = filepath.Join("runs", name)
	}
	cfg, err := DemoConfig(o.Quick, o.ConfigFile, o.Overrides)
	if err != nil {
		return nil, err
	}
	// The run directory's output rule before the (long) prepare; the
	// dataset's is prepare's own (internal/fileguard through prepare.Run).
	if err := CheckRunDir(o.Run, false); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	cfg.Run.Name, cfg.Data.Path = name, o.Data
	out := o.Stdout
	if out == nil {
		out = io.Discard
	}
	t0 := time.Now()
	step := func(n int, what string) { fmt.Fprintf(out, "\n== [%d/4] %s\n", n, what) }

	// 1. Data.
	step(1, "prepare the mixed corpus → "+o.Data)
	upToDate, err := prepare.UpToDate(cfg.Prepare, o.Data, false)
	if err != nil {
		return nil, fmt.Errorf("demo: prepare: %w", err)
	}
	if upToDate && !o.ForcePrepare {
		fmt.Fprintf(out, "dataset %s is up to date (same config and inputs): reused\n", o.Data)
	} else if _, err := prepare.Run(ctx, cfg.Prepare, prepare.RunOptions{
		Out: o.Data, Force: o.ForcePrepare, Summary: o.Prepared, Progress: os.Stderr, Log: slog.Default(),
	}); err != nil {
		return nil, fmt.Errorf("demo: prepare: %w", err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("demo: interrupted during prepare; run it again to continue")
	}
	unigram, err := report.UnigramBaseline(o.Data)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(out, "unigram baseline of the data: %.3f nats/token (a model must beat this to use context)\n", unigram)

	// 2. Training (resumes when the run directory has a checkpoint).
	step(2, "train → "+o.Run)
	fmt.Fprintf(out, "watch it live: kestrel dash %s   (or rerun with --dash)\n", o.Run)
	res, err := Train(ctx, cfg, o.Run, Options{Dash: o.Dash, Stdout: out, Stderr: o.Stderr})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if res.Interrupted {
		return nil, fmt.Errorf("demo: interrupted at step %d; run the same command again to continue", res.Step)
	}

	// 3. Samples and report.
	step(3, "sample and write the report")
	var samples []report.Sample
	for _, s := range demoSamplePrompts {
		for _, temp := range []float64{0.6, 1.0} {
			text, err := generate.Generate(o.Run, generate.Options{Prompt: s, Temperature: temp, TopK: demoTopK, TopP: 1, Tokens: 60, EMA: true, Seed: 1})
			if err != nil {
				return nil, fmt.Errorf("demo: sample: %w", err)
			}
			samples = append(samples, report.Sample{Prompt: s, Temperature: temp, TopK: demoTopK, EMA: true, Text: strings.TrimPrefix(text, s)})
		}
	}
	sum, err := report.Write(report.Input{RunDir: o.Run, DatasetDir: o.Data, Samples: samples, UnigramLoss: unigram, Title: cfg.Run.Name, Status: endStatus(res, nil)})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}

	// 4. Where everything is.
	step(4, "done in "+time.Since(t0).Round(time.Second).String())
	if !sum.Healthy {
		slog.Warn("demo: the report flags problems; read it", "report", sum.Path)
	}
	return &DemoResult{Data: o.Data, Run: o.Run, Report: sum}, nil
}
