package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

// shuffleOpts are the flags of `kestrel data shuffle-report`.
type shuffleOpts struct {
	dataset   string
	perms     string
	synthetic bool
	items     int64
	blocks    int
	steps     int
	batch     int
	stride    int64
	by        string
	lags      int
	out       string
	json      bool
}

func newDataShuffleReportCmd() *cobra.Command {
	var o shuffleOpts
	cmd := &cobra.Command{
		Use:   "shuffle-report (--dataset D | --synthetic) [--permutation feistel,feistel-mix,lcg] [--out report.png]",
		Short: "measure batch composition over steps for the Feistel or LCG permutation, with a PNG plot",
		Long: `How i.i.d. are the batches? For each permutation, label every row of every
batch by the block of the data it comes from (the data in stored order cut
into --blocks equal ranges: topics, if it is sorted by topic) or by source,
and report:

  lag1 / max|acf|   autocorrelation of the per-batch block shares across steps,
                    as deviations from the mixture weights in force at each step
                    (a data stage's planned change is not drift); ~0 for i.i.d.
                    batches, near 1 when batches drift in phases
  max_run           longest run of consecutive batches in which one block holds
                    ≥ 50% of the rows
  mean_max_share    mean over batches of the largest block share
  mean_tv           mean total-variation distance of a batch from the overall mix

--synthetic needs no dataset: items 0..N-1 sorted into --blocks topics, one
source, shuffled exactly as the loader shuffles a source. --dataset runs the
loader itself (with the config's mixture, seq_len and seed). The PNG shows
the mean block index of each batch (i.i.d. batches scatter around the
middle; phases are flat stretches) and the autocorrelation by lag, one line
per permutation. Marin's phases: --synthetic --lcg-stride 3.`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML) for --dataset mode: data mixture, model.seq_len, run.seed")
	f := cmd.Flags()
	f.StringVar(&o.dataset, "dataset", "", "prepared dataset directory (default data.path of the config)")
	f.StringVar(&o.perms, "permutation", "feistel,feistel-mix,lcg", "permutations to compare, comma-separated: feistel | feistel-mix | lcg")
	f.BoolVar(&o.synthetic, "synthetic", false, "use synthetic topic-sorted data instead of a dataset")
	f.Int64Var(&o.items, "items", 1_000_003, "synthetic: number of items")
	f.IntVar(&o.blocks, "blocks", 16, "blocks (topics) the stored order is cut into; with --by source, unused")
	f.IntVar(&o.steps, "steps", 2000, "steps (batches) to measure")
	f.IntVar(&o.batch, "batch", 32, "sequences per batch")
	f.Int64Var(&o.stride, "lcg-stride", 0, "LCG multiplier (0 = data.lcg_stride, and if that is 0 drawn from the seed)")
	f.StringVar(&o.by, "by", "block", "dataset mode: label rows by block (of each source's stored order) or source")
	f.IntVar(&o.lags, "lags", 50, "autocorrelation lags to compute")
	f.StringVar(&o.out, "out", "shuffle-report.png", "PNG plot to write (empty = none)")
	f.BoolVar(&o.json, "json", false, "print one JSON object per permutation instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		if o.steps < 2 || o.batch < 1 || o.blocks < 1 || o.lags < 1 {
			return fmt.Errorf("shuffle-report: need --steps ≥ 2, --batch ≥ 1, --blocks ≥ 1, --lags ≥ 1")
		}
		if o.by != "block" && o.by != "source" {
			return fmt.Errorf("shuffle-report: --by %q: want block or source", o.by)
		}
		if o.stride == 0 {
			o.stride = cfg.Data.LCGStride
		}
		var ds *loader.Dataset
		if !o.synthetic {
			path := o.dataset
			if path == "" {
				path = cfg.Data.Path
			}
			if path == "" {
				return fmt.Errorf("shuffle-report: give --dataset DIR (or data.path), or --synthetic")
			}
			if ds, err = openDataset(path); err != nil {
				return err
			}
		}
		var comps []*loader.Composition
		var labels []string
		for _, name := range strings.Split(o.perms, ",") {
			spec, err := permSpecByName(strings.TrimSpace(name), cfg.Data, o.stride)
			if err != nil {
				return err
			}
			var c *loader.Composition
			if o.synthetic {
				sy := loader.Synthetic{Items: o.items, Blocks: o.blocks, Batch: o.batch, Seed: dataSeed(cfg.Data.Seed, cfg.Run.Seed)}
				c, err = sy.Composition(spec, o.steps, o.lags)
				if err == nil {
					labels = nil
					for b := 0; b < o.blocks; b++ {
						labels = append(labels, fmt.Sprintf("block %d", b))
					}
				}
			} else {
				dc := cfg.Data
				dc.Permutation, dc.FeistelRound, dc.LCGStride, dc.Prefetch = spec.Kind, spec.Round, spec.LCGStride, 0
				var l *loader.Loader
				l, err = loader.New(ds, dc, loader.Options{SeqLen: cfg.Model.SeqLen, Seed: cfg.Run.Seed, Schedule: loader.ConstantBatch(o.batch)})
				if err != nil {
					return fmt.Errorf("shuffle-report: %w", err)
				}
				blocks := o.blocks
				if o.by == "source" {
					blocks = 0
				}
				c, labels, err = l.Composition(strings.TrimSpace(name), o.steps, blocks, o.lags)
				l.Close()
			}
			if err != nil {
				return fmt.Errorf("shuffle-report: %s: %w", name, err)
			}
			comps = append(comps, c)
		}
		if err := printComps(cmd.OutOrStdout(), comps, o.json); err != nil {
			return err
		}
		if o.out != "" {
			if err := plotComps(o.out, comps, labels); err != nil {
				return err
			}
			if !o.json {
				fmt.Fprintf(cmd.OutOrStdout(), "plot: %s\n", o.out)
			}
		}
		return nil
	}
	return cmd
}

// permSpecByName turns a --permutation entry into a spec.
func permSpecByName(name string, dc loader.Config, stride int64) (loader.PermSpec, error) {
	switch name {
	case "feistel":
		return loader.PermSpec{Kind: loader.PermFeistel, Rounds: dc.FeistelRounds, Round: loader.RoundMul}, nil
	case "feistel-mix":
		return loader.PermSpec{Kind: loader.PermFeistel, Rounds: dc.FeistelRounds, Round: loader.RoundMix}, nil
	case "lcg":
		return loader.PermSpec{Kind: loader.PermLCG, LCGStride: stride}, nil
	}
	return loader.PermSpec{}, fmt.Errorf("shuffle-report: --permutation %q: want feistel, feistel-mix or lcg", name)
}

// dataSeed is data.seed, or run.seed when data.seed is 0.
func dataSeed(data, run uint64) uint64 {
	if data != 0 {
		return data
	}
	return run
}

func maxAbsACF(c *loader.Composition) float64 {
	m := 0.0
	for _, a := range c.ACF[1:] {
		m = math.Max(m, math.Abs(a))
	}
	return m
}

func printComps(w io.Writer, comps []*loader.Composition, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, c := range comps {
			if err := enc.Encode(map[string]any{
				"permutation": c.Label, "steps": c.Steps, "labels": c.Labels,
				"lag1_acf": c.Lag1(), "max_abs_acf": maxAbsACF(c), "max_dominated_run": c.MaxRun,
				"max_run_label": c.RunLabel, "max_run_start": c.RunStart,
				"mean_max_share": c.MeanMaxShare, "mean_tv": c.MeanTV,
			}); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(w, "%-22s %8s %10s %8s %15s %8s\n", "permutation", "lag1", "max|acf|", "max_run", "mean_max_share", "mean_tv")
	for _, c := range comps {
		fmt.Fprintf(w, "%-22s %8.3f %10.3f %8d %15.3f %8.3f\n", c.Label, c.Lag1(), maxAbsACF(c), c.MaxRun, c.MeanMaxShare, c.MeanTV)
	}
	if len(comps) > 0 {
		fmt.Fprintf(w, "(%d batches, %d blocks; i.i.d. batches give |acf| ≈ %.2f and max_run 0)\n",
			comps[0].Steps, comps[0].Labels, 2/math.Sqrt(float64(comps[0].Steps*comps[0].Labels)))
	}
	return nil
}

// plotComps writes a two-panel PNG: the mean label of each batch over
// steps, and the autocorrelation by lag, one line per permutation. It is
// written to a temporary file and renamed, so an existing plot survives a
// failure.
func plotComps(out string, comps []*loader.Composition, labels []string) error {
	top := plot.New()
	top.Title.Text = "mean block index of each batch's rows (flat stretches = phases)"
	top.X.Label.Text = "step"
	top.Y.Label.Text = "block"
	if len(labels) > 0 && len(labels) <= 8 {
		top.Title.Text += "; blocks: " + strings.Join(labels, ", ")
	}
	bot := plot.New()
	bot.Title.Text = "autocorrelation of batch composition"
	bot.X.Label.Text = "lag (steps)"
	bot.Y.Label.Text = "ACF"
	for i, c := range comps {
		share := make(plotter.XYs, c.Steps)
		for s := range share {
			m := 0.0
			for b, x := range c.Shares[s] {
				m += float64(b) * x
			}
			share[s] = plotter.XY{X: float64(s), Y: m}
		}
		acf := make(plotter.XYs, len(c.ACF)-1)
		for k := range acf {
			acf[k] = plotter.XY{X: float64(k + 1), Y: c.ACF[k+1]}
		}
		for _, pl := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{top, share}, {bot, acf}} {
			line, err := plotter.NewLine(pl.xys)
			if err != nil {
				return fmt.Errorf("plot: %w", err)
			}
			line.Color = plotutil.Color(i)
			line.Width = vg.Points(1)
			pl.p.Add(line)
			pl.p.Legend.Add(c.Label, line)
		}
	}
	top.Legend.Top = true
	bot.Legend.Top = true
	bot.Add(plotter.NewGrid())
	img := vgimg.New(vg.Points(900), vg.Points(720))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	cs := plot.Align([][]*plot.Plot{{top}, {bot}}, tiles, dc)
	top.Draw(cs[0][0])
	bot.Draw(cs[1][0])
	tmp, err := os.CreateTemp(filepath.Dir(out), ".shuffle-report-*.png")
	if err != nil {
		return fmt.Errorf("plot %s: %w", out, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("plot %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("plot %s: %w", out, err)
	}
	return nil
}
