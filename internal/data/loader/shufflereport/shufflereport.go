// Package shufflereport measures how i.i.d. the loader's batches are
// (kestrel data shuffle-report): for each permutation it labels every row
// of every batch by the block of stored order (or the source) it comes
// from, summarises the batch composition over steps (loader.Composition)
// and plots it. It is kept apart from package loader so the loader does not
// depend on the plotting library.
package shufflereport

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// Options configure Run.
type Options struct {
	Permutations []string // names: feistel | feistel-mix | lcg
	Steps        int      // batches measured, ≥ 2
	Batch        int      // rows per batch, ≥ 1
	Blocks       int      // blocks the stored order is cut into, ≥ 1
	Lags         int      // autocorrelation lags, ≥ 1
	LCGStride    int64    // LCG multiplier (0 = drawn from the seed)
	// Dataset is the prepared data to run the loader over; nil measures
	// synthetic data instead: Items items sorted into Blocks topics, one
	// source, shuffled exactly as the loader shuffles a source.
	Dataset  *loader.Dataset
	Items    int64
	BySource bool          // dataset: label rows by source instead of block
	Data     loader.Config // dataset: the mixture; its permutation settings are replaced
	SeqLen   int           // dataset: tokens per sequence
	RunSeed  uint64        // run.seed (the data seed when Data.Seed is 0)

	// Report's output: Out is the PNG plot to write ("" = none); an
	// existing file is replaced only when this command wrote it (its
	// marker chunk) or with Overwrite, never through a link, never one of
	// Inputs (the config file, the dataset) nor inside them (fileguard).
	Out       string
	Overwrite bool
	Inputs    []string
}

// Result is what Report measured and wrote: the composition statistics
// of each permutation (in the order asked) and the plot written ("" when
// none was asked or it failed).
type Result struct {
	Comps []*loader.Composition
	Plot  string
}

// Report is kestrel data shuffle-report: the output check (before any
// work), Run, then the plot at opt.Out (cmd/kestrel/internal/show prints
// the statistics). A failed plot returns the Result with the error, so
// the statistics are still printed.
func Report(opt Options) (*Result, error) {
	if opt.Out != "" {
		if err := CheckOut(opt.Out, opt.Inputs, opt.Overwrite); err != nil {
			return nil, err
		}
	}
	comps, labels, err := Run(opt)
	if err != nil {
		return nil, fmt.Errorf("shuffle-report: %w", err)
	}
	res := &Result{Comps: comps}
	if opt.Out == "" {
		return res, nil
	}
	if err := Plot(opt.Out, comps, labels); err != nil {
		return res, err
	}
	res.Plot = opt.Out
	return res, nil
}

// CheckOut applies the output rule (internal/fileguard) to the plot path
// out: it may be written when it does not exist, or is a regular file
// this command wrote (WrotePlot) or overwrite is set; a link, a
// non-regular file, one of inputs or a path inside an input directory is
// refused whatever overwrite says.
func CheckOut(out string, inputs []string, overwrite bool) error {
	g := fileguard.File{Path: out, What: "shuffle-report plot", Inputs: inputs, Overwrite: overwrite || WrotePlot(out), Flag: "--overwrite"}
	if err := g.Check(); err != nil {
		return fmt.Errorf("shuffle-report: --out: %w", err)
	}
	return nil
}

// Run measures the composition of Steps batches under each permutation
// and returns one Composition per permutation and the names of the labels
// (blocks or sources).
func Run(opt Options) ([]*loader.Composition, []string, error) {
	if opt.Steps < 2 || opt.Batch < 1 || opt.Blocks < 1 || opt.Lags < 1 {
		return nil, nil, fmt.Errorf("need steps ≥ 2, batch ≥ 1, blocks ≥ 1, lags ≥ 1")
	}
	var comps []*loader.Composition
	var labels []string
	for _, name := range opt.Permutations {
		name = strings.TrimSpace(name)
		spec, err := PermSpec(name, opt.Data, opt.LCGStride)
		if err != nil {
			return nil, nil, err
		}
		var c *loader.Composition
		if opt.Dataset == nil {
			sy := loader.Synthetic{Items: opt.Items, Blocks: opt.Blocks, Batch: opt.Batch, Seed: dataSeed(opt.Data.Seed, opt.RunSeed)}
			c, err = sy.Composition(spec, opt.Steps, opt.Lags)
			if err == nil {
				labels = nil
				for b := 0; b < opt.Blocks; b++ {
					labels = append(labels, fmt.Sprintf("block %d", b))
				}
			}
		} else {
			c, labels, err = datasetComposition(name, spec, opt)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		comps = append(comps, c)
	}
	return comps, labels, nil
}

// datasetComposition runs the loader over opt.Dataset with spec.
func datasetComposition(name string, spec loader.PermSpec, opt Options) (*loader.Composition, []string, error) {
	dc := opt.Data
	dc.Permutation, dc.FeistelRound, dc.LCGStride, dc.Prefetch = spec.Kind, spec.Round, spec.LCGStride, 0
	l, err := loader.New(opt.Dataset, dc, loader.Options{SeqLen: opt.SeqLen, Seed: opt.RunSeed, Schedule: loader.ConstantBatch(opt.Batch)})
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	blocks := opt.Blocks
	if opt.BySource {
		blocks = 0
	}
	return l.Composition(name, opt.Steps, blocks, opt.Lags)
}

// PermSpec turns a permutation name (feistel, feistel-mix, lcg) into a
// spec, with the Feistel rounds of dc and the given LCG stride.
func PermSpec(name string, dc loader.Config, stride int64) (loader.PermSpec, error) {
	switch name {
	case "feistel":
		return loader.PermSpec{Kind: loader.PermFeistel, Rounds: dc.FeistelRounds, Round: loader.RoundMul}, nil
	case "feistel-mix":
		return loader.PermSpec{Kind: loader.PermFeistel, Rounds: dc.FeistelRounds, Round: loader.RoundMix}, nil
	case "lcg":
		return loader.PermSpec{Kind: loader.PermLCG, LCGStride: stride}, nil
	}
	return loader.PermSpec{}, fmt.Errorf("permutation %q: want feistel, feistel-mix or lcg", name)
}

// dataSeed is data.seed, or run.seed when data.seed is 0 (as the loader
// keys its permutations).
func dataSeed(data, run uint64) uint64 {
	if data != 0 {
		return data
	}
	return run
}

// MaxAbsACF is the largest |autocorrelation| at lags ≥ 1.
func MaxAbsACF(c *loader.Composition) float64 {
	m := 0.0
	for _, a := range c.ACF[1:] {
		m = math.Max(m, math.Abs(a))
	}
	return m
}

// Plot writes a two-panel PNG: the mean label of each batch over
// steps, and the autocorrelation by lag, one line per permutation. It is
// written to a temporary file and renamed, so an existing plot survives a
// failure.
func Plot(out string, comps []*loader.Composition, labels []string) error {
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
	var png bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&png); err != nil {
		return fmt.Errorf("plot %s: %w", out, err)
	}
	marked, err := markPNG(png.Bytes())
	if err != nil {
		return fmt.Errorf("plot %s: %w", out, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".shuffle-report-*.png")
	if err != nil {
		return fmt.Errorf("plot %s: %w", out, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(marked); err != nil {
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

// ForRun fills the run-dependent options the way kestrel data
// shuffle-report takes them: the permutations (comma-separated), the
// labels (by = block or source), the run's mixture, seq_len and seed, the
// LCG stride from data.lcg_stride when none was given, and — unless
// synthetic — the dataset (dataset, else data.path) opened for the loader.
func (o *Options) ForRun(perms, by string, data loader.Config, seqLen int, seed uint64, dataset string, synthetic bool) error {
	if by != "block" && by != "source" {
		return fmt.Errorf("shuffle-report: --by %q: want block or source", by)
	}
	if o.LCGStride == 0 {
		o.LCGStride = data.LCGStride
	}
	o.Permutations, o.BySource = strings.Split(perms, ","), by == "source"
	o.Data, o.SeqLen, o.RunSeed = data, seqLen, seed
	if synthetic {
		return nil
	}
	if dataset == "" {
		dataset = data.Path
	}
	if dataset == "" {
		return fmt.Errorf("shuffle-report: give --dataset DIR (or data.path), or --synthetic")
	}
	o.Inputs = append(o.Inputs, dataset)
	var err error
	o.Dataset, _, err = loader.Open(dataset)
	return err
}
