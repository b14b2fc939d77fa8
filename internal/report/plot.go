package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"regexp"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// panel is one PNG of the report: the metrics matching its patterns,
// against steps.
type panel struct {
	file, title, ylabel string
	match               []*regexp.Regexp
	logY                bool
	hline               float64 // a dashed reference line (NaN = none)
	hlineLabel          string
}

var palette = []color.RGBA{
	{47, 111, 222, 255}, {217, 72, 15, 255}, {43, 138, 62, 255}, {134, 46, 156, 255},
	{201, 42, 42, 255}, {11, 114, 133, 255}, {230, 119, 0, 255}, {92, 124, 250, 255},
}

// panels are the report's plots from the metric registry
// (monitor.Plots), in order; the loss plot carries the unigram baseline.
func panels(unigram float64) []panel {
	var out []panel
	for _, pl := range monitor.Plots() {
		p := panel{file: pl.File, title: pl.Title, ylabel: pl.YLabel, logY: pl.LogY, hline: math.NaN()}
		if pl.Baseline {
			p.hline, p.hlineLabel = unigram, "unigram baseline"
		}
		for _, e := range pl.Match {
			p.match = append(p.match, regexp.MustCompile(e))
		}
		out = append(out, p)
	}
	return out
}

func (p panel) names(log *runlog.Log) []string {
	var out []string
	for _, n := range log.Names() {
		for _, re := range p.match {
			if re.MatchString(n) {
				out = append(out, n)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// maxPlotPoints bounds the points per line; longer series are reduced to
// per-bucket min and max so spikes stay visible.
const maxPlotPoints = 1500

// envelope reduces xs/ys to at most 2·n points, keeping each bucket's
// minimum and maximum in x order.
func envelope(xs, ys []float64, n int) plotter.XYs {
	if len(xs) <= 2*n {
		out := make(plotter.XYs, len(xs))
		for i := range xs {
			out[i].X, out[i].Y = xs[i], ys[i]
		}
		return out
	}
	out := make(plotter.XYs, 0, 2*n)
	per := (len(xs) + n - 1) / n
	for s := 0; s < len(xs); s += per {
		e := min(s+per, len(xs))
		lo, hi := s, s
		for i := s; i < e; i++ {
			if ys[i] < ys[lo] {
				lo = i
			}
			if ys[i] > ys[hi] {
				hi = i
			}
		}
		a, b := min(lo, hi), max(lo, hi)
		out = append(out, plotter.XY{X: xs[a], Y: ys[a]})
		if b != a {
			out = append(out, plotter.XY{X: xs[b], Y: ys[b]})
		}
	}
	return out
}

// draw writes the panel's PNG into dir and reports whether it had data.
// gonum/plot panics on values it cannot place (a log axis with no
// positive range); that panic is returned as the panel's error, so a
// report never takes the run down with it.
func (p panel) draw(log *runlog.Log, dir string) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("plot %s: %v", p.file, r)
		}
	}()
	names := p.names(log)
	if len(names) == 0 {
		return false, nil
	}
	pl := plot.New()
	pl.Title.Text = p.title
	pl.X.Label.Text = "step"
	pl.Y.Label.Text = p.ylabel
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	if p.logY {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	drawn, xmin, xmax, ymin, ymax := 0, math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, n := range names {
		xs, ys, err := log.Series(n, "step")
		if err != nil {
			return false, err
		}
		var fx, fy []float64
		for j := range xs {
			if math.IsInf(ys[j], 0) || math.IsNaN(ys[j]) || (p.logY && ys[j] <= 0) {
				continue
			}
			fx, fy = append(fx, xs[j]), append(fy, ys[j])
		}
		if len(fx) == 0 {
			continue
		}
		xmin, xmax = math.Min(xmin, fx[0]), math.Max(xmax, fx[len(fx)-1])
		for _, y := range fy {
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
		line, err := plotter.NewLine(envelope(fx, fy, maxPlotPoints))
		if err != nil {
			return false, fmt.Errorf("plot %s: %w", n, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.2)
		pl.Add(line)
		pl.Legend.Add(n, line)
		if len(fx) < 60 { // sparse series (evals): mark the points
			sc, err := plotter.NewScatter(envelope(fx, fy, maxPlotPoints))
			if err == nil {
				sc.Color = line.Color
				sc.Radius = vg.Points(2)
				pl.Add(sc)
			}
		}
		drawn++
	}
	if drawn == 0 {
		return false, nil
	}
	if p.logY && ymin == ymax { // one value: gonum would pad the range below zero
		pl.Y.Min, pl.Y.Max = ymin/2, ymax*2
	}
	if !math.IsNaN(p.hline) && p.hline > 0 && xmax >= xmin {
		ref, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: p.hline}, {X: xmax, Y: p.hline}})
		if err == nil {
			ref.Color = color.RGBA{120, 120, 120, 255}
			ref.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			pl.Add(ref)
			pl.Legend.Add(fmt.Sprintf("%s (%.3f)", p.hlineLabel, p.hline), ref)
		}
	}
	if err := pl.Save(7*vg.Inch, 3.6*vg.Inch, filepath.Join(dir, p.file)); err != nil {
		return false, fmt.Errorf("plot %s: %w", p.file, err)
	}
	return true, nil
}
