// Package sweep runs a grid of short training runs that differ in a few
// config values (kestrel sweep): the seed-003 habit of a small learning-rate
// sweep before a long run. Each point of the grid is a normal run directory
// (config, manifest, metrics, alerts, report) under one output directory;
// the sweep reads their metrics back into one table.
//
// Runs go one after another in this process (start-up, the peak check and
// package init paid once), or Parallel at a time as `kestrel train`
// processes on GOMAXPROCS=1 each (a run per core).
package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/run"
)

// Axis is one --set of a sweep: a config field and the values it takes.
type Axis struct {
	Path   string   `json:"path"`   // dotted config path, e.g. "optim.lr"
	Values []string `json:"values"` // the values as typed, in order
}

// Point is one run of the grid: its name and its overrides, one per axis.
type Point struct {
	Name string
	Set  []config.Override
}

// ParseSet parses --set flags of the form section.key=v1,v2,… into axes.
// Values split at commas outside brackets and quotes (optim.multistep_at=[0.8,0.9]
// is one value). An unknown field, a field set twice, an empty value list or
// an empty value is refused naming the flag.
func ParseSet(flags []string) ([]Axis, error) {
	known := map[string]bool{}
	for _, f := range config.Fields() {
		known[f.Path] = true
	}
	var axes []Axis
	seen := map[string]bool{}
	for _, fl := range flags {
		path, vals, ok := strings.Cut(fl, "=")
		path = strings.TrimSpace(path)
		if !ok || path == "" {
			return nil, fmt.Errorf("--set %q: want section.key=v1,v2,…", fl)
		}
		if !known[path] {
			return nil, fmt.Errorf("--set %s: unknown config field %q (see kestrel config --defaults)", fl, path)
		}
		if seen[path] {
			return nil, fmt.Errorf("--set %s: %s is already swept by an earlier --set", fl, path)
		}
		seen[path] = true
		vs := splitValues(vals)
		for i, v := range vs {
			if strings.TrimSpace(v) == "" {
				return nil, fmt.Errorf("--set %s: value %d of %s is empty", fl, i+1, path)
			}
		}
		axes = append(axes, Axis{Path: path, Values: vs})
	}
	return axes, nil
}

// splitValues splits s at the commas outside [], {} and quotes.
func splitValues(s string) []string {
	var out []string
	depth, quote, start := 0, rune(0), 0
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '[' || r == '{':
			depth++
		case r == ']' || r == '}':
			depth--
		case r == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// Grid is the cartesian product of the axes, the last axis varying fastest,
// each point named by its values (e.g. "lr=1e-3_wd=0.1": the key's last
// part, or the whole path where two axes share it).
func Grid(axes []Axis) []Point {
	short := map[string]int{}
	for _, a := range axes {
		short[lastPart(a.Path)]++
	}
	points := []Point{{}}
	for _, a := range axes {
		label := lastPart(a.Path)
		if short[label] > 1 {
			label = a.Path
		}
		var next []Point
		for _, p := range points {
			for _, v := range a.Values {
				name := label + "=" + safeName(v)
				if p.Name != "" {
					name = p.Name + "_" + name
				}
				set := append(append([]config.Override(nil), p.Set...), config.Override{Path: a.Path, Value: v})
				next = append(next, Point{Name: name, Set: set})
			}
		}
		points = next
	}
	if len(axes) == 0 {
		return nil
	}
	return points
}

func lastPart(path string) string { return path[strings.LastIndex(path, ".")+1:] }

// safeName keeps a value usable as a directory name.
func safeName(v string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == ' ' || r == '"' || r == '\'' || r < ' ':
			return '_'
		}
		return r
	}, strings.TrimSpace(v))
}

// Options configure Run.
type Options struct {
	Base  config.Config // the run config (file and fixed overrides resolved)
	Axes  []Axis
	Steps int    // train.steps of every run (0: the config's)
	Out   string // the sweep's directory, one run directory per point ("" = runs/sweep-<run.name>)
	// Parallel > 1 runs that many points at a time, each a `kestrel train`
	// process of Exec on one thread; 0 or 1 runs them here, one by one.
	Parallel int
	Exec     string // the kestrel binary for Parallel > 1 ("" = this executable)
	// Train runs one point in this process (nil: run.Train, its result
	// line and notices to Stderr).
	Train  func(ctx context.Context, cfg config.Config, dir string, log *slog.Logger) error
	Stderr io.Writer // nil: discarded
	// Logger receives the sweep's progress lines (nil: slog.Default()).
	Logger *slog.Logger
}

// Configs resolves every point of the grid against o.Base: its overrides
// applied (an unknown field or a value of the wrong type refused naming the
// --set flag), train.steps and run.name set. Nothing is written.
func Configs(o Options) ([]Point, []config.Config, error) {
	points := Grid(o.Axes)
	if len(points) == 0 {
		return nil, nil, errors.New("sweep: no --set: nothing to sweep")
	}
	if o.Parallel < 0 {
		return nil, nil, fmt.Errorf("sweep: --parallel must be >= 0, got %d", o.Parallel)
	}
	if o.Steps < 0 {
		return nil, nil, fmt.Errorf("sweep: --steps must be >= 0, got %d", o.Steps)
	}
	for _, a := range o.Axes {
		if a.Path == "train.steps" && o.Steps > 0 {
			return nil, nil, fmt.Errorf("sweep: --set train.steps=%s and --steps %d: --steps would give every point %d steps; drop one", strings.Join(a.Values, ","), o.Steps, o.Steps)
		}
		seen := map[string]int{}
		for i, v := range a.Values {
			if j, ok := seen[safeName(v)]; ok {
				return nil, nil, fmt.Errorf("sweep: --set %s=%s: values %d (%s) and %d (%s) would train into one run directory (%s): repeat no value; a directory name holds no / \\ space or quote",
					a.Path, strings.Join(a.Values, ","), j+1, a.Values[j], i+1, v, lastPart(a.Path)+"="+safeName(v))
			}
			seen[safeName(v)] = i
		}
	}
	cfgs := make([]config.Config, len(points))
	for i, p := range points {
		cfg := o.Base
		for _, ov := range p.Set {
			if err := ov.Apply(&cfg); err != nil {
				return nil, nil, fmt.Errorf("sweep: --set %s=%s: %w", ov.Path, ov.Value, err)
			}
		}
		if err := config.CheckFinite(cfg); err != nil {
			return nil, nil, fmt.Errorf("sweep: run %s: %w", p.Name, err)
		}
		if o.Steps > 0 {
			cfg.Train.Steps = o.Steps
		}
		cfg.Run.Name = o.Base.Run.Name + "-" + p.Name
		cfgs[i] = cfg
	}
	return points, cfgs, nil
}

// Marker is the file that marks a directory as a sweep's (kestrel sweep
// writes it first): the sweep's axes and steps, as JSON.
const Marker = "sweep.json"

// prepareOut checks the sweep directory out against fileguard's rule (a
// new or empty directory, or one that holds Marker; for a sweep of an
// earlier kestrel, without Marker, one that holds a run directory of a
// point of this grid), creates it and writes Marker. A symbolic link, a
// file, or a directory of the user's is refused, and nothing is written.
func prepareOut(out string, points []Point, axes []Axis, steps int) error {
	g := fileguard.Dir{Path: out, What: "sweep directory", Markers: []string{Marker}}
	err := g.Check()
	var re *fileguard.RefusedError
	if errors.As(err, &re) {
		if st, lerr := os.Lstat(out); lerr == nil && st.IsDir() && slices.ContainsFunc(points, func(p Point) bool { return isDir(Dir(out, p)) && run.CheckRunDir(Dir(out, p), false) == nil }) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("sweep: --out: %w", err)
	}
	if err := sameSteps(out, steps); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	b, err := json.MarshalIndent(struct {
		Axes  []Axis `json:"axes"`
		Steps int    `json:"steps"`
	}{axes, steps}, "", "  ")
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(out, Marker), append(b, '\n')); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// sameSteps refuses a sweep of --steps steps into out when out's Marker
// records other steps: its finished points would resume with the LR
// schedule of the new length after steps of the old one (neither sweep's
// runs). No Marker (a new sweep, or one of an earlier kestrel) passes.
func sameSteps(out string, steps int) error {
	path := filepath.Join(out, Marker)
	b, err := fileguard.ReadFile(path, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var m struct {
		Steps *int `json:"steps"`
	}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return fmt.Errorf("sweep: --out: %s: %w", path, err)
	}
	if m.Steps != nil && *m.Steps != steps {
		return fmt.Errorf("sweep: --out %s is a sweep of --steps %d; --steps %d would resume its runs on another LR schedule: use another --out, or --steps %d", out, *m.Steps, steps, *m.Steps)
	}
	return nil
}

// isDir reports whether path is a directory (not a link to one).
func isDir(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.IsDir()
}

// Dir is the run directory of point p in the sweep directory out.
func Dir(out string, p Point) string { return filepath.Join(out, p.Name) }

// Run trains every point of the grid into its own run directory under
// o.Out and returns one result per point, in grid order. A run that fails
// is recorded with its error and the sweep goes on; when ctx is cancelled
// (Ctrl-C) the running points stop the way kestrel train stops (a
// checkpoint, resumable by the same sweep command), the points not started
// are left out, and the finished ones stay intact. A point whose directory
// already holds a finished run is not trained again (its run resumes and
// finds nothing to do).
func Run(ctx context.Context, o Options) ([]Result, error) {
	points, cfgs, err := Configs(o)
	if err != nil {
		return nil, err
	}
	if o.Out == "" {
		o.Out = filepath.Join("runs", "sweep-"+o.Base.Run.Name)
	}
	if err := prepareOut(o.Out, points, o.Axes, o.Steps); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	errs := make([]error, len(points))
	started := make([]bool, len(points))
	if o.Parallel > 1 {
		if p := o.Base.Train.ParallelMicroBatches; p > 1 {
			log.Info("sweep: --parallel trains each point on one thread, so its train.parallel_micro_batches passes take turns on it (the same results as --parallel 1; each point's log warns of it)",
				"parallel", o.Parallel, "parallel_micro_batches", p)
		}
		err = runProcesses(ctx, o, points, cfgs, started, errs, log)
	} else {
		err = runHere(ctx, o, points, cfgs, started, errs, log)
	}
	if err != nil {
		return nil, err
	}
	var res []Result
	for i, p := range points {
		if !started[i] {
			continue
		}
		r := Read(Dir(o.Out, p))
		r.Name, r.Err = p.Name, errs[i]
		if r.Err == nil && ctx.Err() != nil && r.LastStep < cfgs[i].Train.Steps {
			r.Interrupted = true
		}
		res = append(res, r)
	}
	return res, nil
}

// runHere trains the points one by one in this process.
func runHere(ctx context.Context, o Options, points []Point, cfgs []config.Config, started []bool, errs []error, log *slog.Logger) error {
	if o.Train == nil {
		o.Train = func(ctx context.Context, cfg config.Config, dir string, log *slog.Logger) error {
			_, err := run.Train(ctx, cfg, dir, run.Options{Stdout: o.Stderr, Stderr: o.Stderr, Logger: log})
			return err
		}
	}
	for i, p := range points {
		if ctx.Err() != nil {
			return nil
		}
		started[i] = true
		log.Info("sweep: run", "n", i+1, "of", len(points), "name", p.Name, "dir", Dir(o.Out, p))
		errs[i] = o.Train(ctx, cfgs[i], Dir(o.Out, p), log)
		if errs[i] != nil {
			log.Warn("sweep: run failed", "name", p.Name, "err", errs[i])
		}
	}
	return nil
}
