package prepare

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/data/corpus"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// DefaultUnitBytes is the size of the byte ranges large JSONL inputs are
// cut into in a distributed run. Units are claimed one at a time, so the
// ranks end phase 1 within about one unit's time of each other: 8 MB
// (about 0.3 s of one core) balanced the benchmark's 2 ranks to 0.1 s,
// 32 MB left them 0.5 s apart.
const DefaultUnitBytes = 8 << 20

// DistOptions are the settings of RunDist.
type DistOptions struct {
	RunOptions
	// Comm is the group of ranks (comm.FromEnv under mpirun or srun).
	Comm comm.Comm
	// UnitBytes is the target size of a work unit (0 = DefaultUnitBytes).
	UnitBytes int64
	// WorkDir holds the per-unit outputs and completion markers that let a
	// rerun skip finished units ("" = .<out>.prepare-work beside Out). It
	// must be on a file system every rank sees, as must Out. It is removed
	// after a successful run.
	WorkDir string
	// Timeout, when > 0, bounds how long a rank waits for the others at a
	// collective: a rank that died or hangs then makes the others stop with
	// an error naming it (comm.HangError). Set it above the longest
	// imbalance between ranks (rank 0 alone trains the tokenizer).
	Timeout time.Duration

	hooks *distHooks // tests: called around phase 1's claims
}

// distHooks let tests order the ranks' claims.
type distHooks struct {
	beforeClaims, afterClaims func()
	// decontam, when set, replaces the decontamination settings this rank
	// builds its index from (tests: a host that sees other eval files).
	decontam func(decontam.Config) decontam.Config
}

// WorkDirFor is the default work directory of a distributed run writing out.
func WorkDirFor(out string) string {
	out = filepath.Clean(out)
	return filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".prepare-work")
}

// distWork is one rank's state of a distributed run.
type distWork struct {
	c         comm.Comm
	p         *pipeline
	hooks     *distHooks
	dir       string // work directory
	claims    string // this run's claim folder (dist_claim.go)
	unitBytes int64
	units     []unit
	owner     []int
	mine      []int // my unit indices, ascending
	metas     map[int]*unitMeta
	// keptUnits (rank 0) are the units with kept documents, in order.
	keptUnits []int
	stats     datareport.RankStats
	timings   map[string]float64
}

// RunDist is Run over the ranks of opts.Comm: every rank calls it with the
// same config and options. The output is identical to Run's in the sense
// of Diff (docs/prepare-distributed.md): the same kept documents in the
// same order per source, the same rejects, a byte-identical tokenizer.json
// and the same token sequence per source and split. Rank 0 returns the
// report; the other ranks return it too once rank 0 has installed the
// dataset. A rank that fails makes every rank return an error naming it.
func RunDist(ctx context.Context, cfg Config, opts DistOptions) (*datareport.Report, error) {
	c := opts.Comm
	if c == nil {
		return nil, errors.New("prepare: RunDist without a Comm")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.UnitBytes <= 0 {
		opts.UnitBytes = DefaultUnitBytes
	}
	if opts.Out == "" {
		return nil, errors.New("prepare: no output directory (--out)")
	}
	if c.Rank() != 0 {
		opts.Summary, opts.Progress = nil, nil
	}
	if opts.WorkDir == "" {
		opts.WorkDir = WorkDirFor(opts.Out)
	}
	if opts.Timeout > 0 {
		comm.SetTimeout(c, opts.Timeout)
	}
	runStart := time.Now()
	cfg, inputs, fp, err := resolveAll(cfg, opts.Strict)
	if err := agree(c, "resolve inputs", err); err != nil {
		return nil, err
	}

	// Rank 0 decides whether the dataset is up to date and creates the
	// temporary output directory; every rank writes into it.
	var dir *atomicfile.Dir
	var current *datareport.Report // rank 0: the dataset when it is up to date
	var tmp string
	if c.Rank() == 0 {
		err = removeLeftovers(opts.RunOptions)
		if err == nil {
			current = upToDate(opts.RunOptions, fp)
		}
		if err == nil && current == nil {
			err = checkOut(opts.Out)
		}
		if err == nil && current == nil {
			out := filepath.Clean(opts.Out)
			if dir, err = atomicfile.NewDir(filepath.Dir(out), filepath.Base(out)); err == nil {
				defer dir.Abort()
				tmp = dir.Path()
			}
		}
		if err == nil {
			err = os.MkdirAll(opts.WorkDir, 0o755)
		}
		if err == nil && tmp != "" {
			_, err = newClaims(opts.WorkDir, tmp)
		}
	}
	if err := agree(c, "create output", err); err != nil {
		return nil, err
	}
	tb, err := c.BcastBytes([]byte(tmp), 0)
	if err != nil {
		return nil, fmt.Errorf("prepare: broadcast output directory: %w", err)
	}
	tmp = string(tb)
	if tmp == "" { // up to date
		if c.Rank() == 0 {
			summarize(opts.RunOptions, current)
		}
		if current == nil {
			current, err = datareport.Load(opts.Out)
		}
		return current, err
	}

	// Every rank builds the decontamination index itself, in the
	// background while phase 1 runs: broadcasting it cost rank 0 the
	// encoding and the others the decoding (together as much as building),
	// after phase 1, with the ranks waiting for each other. The ranks then
	// compare fingerprints of what they built (awaitDecontam), so a host
	// that reads other eval files stops the run instead of filtering
	// differently.
	pcfg := cfg
	pcfg.Decontam.Enabled = false
	p, err := newPipeline(pcfg, opts.RunOptions, inputs, tmp)
	if err == nil {
		p.cfg = cfg
	}
	if err == nil && p.near != nil && p.near.n.Verifies() && c.Size() > 1 {
		err = errors.New("prepare.dedup.minhash.verify = true cannot be partitioned across ranks (the decision depends on the order of buckets); run with one rank or verify = false")
	}
	if err := agree(c, "set up", err); err != nil {
		return nil, err
	}
	var decIndex chan decBuilt
	if cfg.Decontam.Enabled {
		decIndex = make(chan decBuilt, 1)
		dcfg := cfg.Decontam.Index
		if opts.hooks != nil && opts.hooks.decontam != nil {
			dcfg = opts.hooks.decontam(dcfg)
		}
		go func() {
			t := time.Now()
			d, err := newDecontam(dcfg)
			fp := ""
			if err == nil {
				fp, err = decontamFingerprint(dcfg, d)
			}
			decIndex <- decBuilt{d, fp, err, time.Since(t).Seconds()}
		}()
	}
	w := &distWork{c: c, p: p, hooks: opts.hooks, dir: opts.WorkDir, claims: filepath.Join(claimsRoot(opts.WorkDir), filepath.Base(tmp)), unitBytes: opts.UnitBytes, metas: map[int]*unitMeta{}, timings: map[string]float64{}}
	w.stats = datareport.RankStats{Rank: c.Rank(), Host: c.Host(), Workers: p.workers}
	if err := w.plan(cfg, inputs, opts.UnitBytes, fp); err != nil {
		return nil, err
	}
	if err := w.phase1(ctx, fp, opts.UnitBytes); err != nil {
		return nil, err
	}
	dups, err := w.exact()
	if err != nil {
		return nil, err
	}
	drops, hot, nClusters, err := w.near(dups)
	if err != nil {
		return nil, err
	}
	if cfg.Decontam.Enabled {
		if err := awaitDecontam(c, p, decIndex); err != nil {
			return nil, err
		}
	}
	outs, err := w.pass2(ctx, dups, drops, hot)
	if err != nil {
		return nil, err
	}
	rep, err := w.finish(ctx, outs, nClusters, hot, fp, runStart)
	if err := agree(c, "finish", err); err != nil {
		return nil, err
	}
	if c.Rank() == 0 {
		if err := dir.Install(filepath.Clean(opts.Out)); err != nil {
			err = fmt.Errorf("prepare: %w", err)
			return nil, agree(c, "install", err)
		}
	}
	if err := agree(c, "install", nil); err != nil {
		return nil, err
	}
	if c.Rank() == 0 {
		if err := os.RemoveAll(opts.WorkDir); err != nil {
			opts.Log.Warn("prepare: could not remove the work directory", "dir", opts.WorkDir, "err", err)
		}
		summarize(opts.RunOptions, rep)
		return rep, nil
	}
	return datareport.Load(opts.Out)
}

// decBuilt is a rank's decontamination index, built in the background,
// and its fingerprint (decontamFingerprint).
type decBuilt struct {
	d   *decontaminator
	fp  string
	err error
	sec float64
}

// awaitDecontam waits for this rank's decontamination index; every rank
// stops when one failed to build it, or built one whose fingerprint differs
// from rank 0's (the error names that rank and its host).
func awaitDecontam(c comm.Comm, p *pipeline, built <-chan decBuilt) error {
	r := <-built
	err := r.err
	if err == nil {
		p.dec = r.d
		p.timings["decontam_index_build"] = r.sec
	} else {
		err = fmt.Errorf("prepare.decontam: %w", err)
	}
	if err := agree(c, "build decontamination index", err); err != nil {
		return err
	}
	all, err := c.AllGatherBytes([]byte(r.fp + "\x00" + c.Host()))
	if err != nil {
		return fmt.Errorf("prepare: compare decontamination indexes: %w", err)
	}
	fp0, host0, _ := strings.Cut(string(all[0]), "\x00")
	for rank, b := range all[1:] {
		if fp, host, _ := strings.Cut(string(b), "\x00"); fp != fp0 {
			return fmt.Errorf("prepare.decontam: rank %d on %s built a different decontamination index than rank 0 on %s "+
				"(every rank builds it from the eval-set files of prepare.decontam: they differ between the hosts' copies)", rank+1, host, host0)
		}
	}
	return nil
}

// decontamFingerprint identifies the index built from cfg: the sha256 of
// each eval-set file's contents (not its path, which may differ between
// hosts) and the counts the index holds per set.
func decontamFingerprint(cfg decontam.Config, d *decontaminator) (string, error) {
	h := sha256.New()
	for _, set := range cfg.EvalSets {
		for _, path := range set.Paths {
			fh, err := runlog.HashFile(path)
			if err != nil {
				return "", fmt.Errorf("eval set %s: %w", set.Name, err)
			}
			fmt.Fprintf(h, "%s\x00%s\n", set.Name, fh)
		}
	}
	for _, st := range d.x.Stats() {
		fmt.Fprintf(h, "%s %d %d %d\n", st.Name, st.Items, st.NGrams, st.Common)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// resolveAll resolves the config as given (raw) and every source's
// inputs, and fingerprints the run; cfg is raw with its paths resolved,
// the config the run reads from.
func resolveAll(raw Config, strict bool) (cfg Config, inputs [][]corpus.Input, fp string, err error) {
	if err := raw.validate(); err != nil {
		return raw, nil, "", err
	}
	if cfg, err = resolved(raw); err != nil {
		return raw, nil, "", err
	}
	inputs = make([][]corpus.Input, len(cfg.Sources))
	for i, s := range cfg.Sources {
		in, err := corpus.Resolve(s.Inputs)
		if err != nil {
			return cfg, nil, "", fmt.Errorf("source %q: %w", s.Name, err)
		}
		inputs[i] = in
	}
	fp, err = fingerprint(raw, cfg, inputs, strict)
	return cfg, inputs, fp, err
}

// agree is the error check every rank makes between phases: each rank
// contributes its error (or none) and every rank returns an error when
// any rank failed, naming the first rank that did and its host. A rank
// that never arrives (dead) surfaces as the Comm's error.
func agree(c comm.Comm, phase string, err error) error {
	msg := ""
	if err != nil {
		msg = fmt.Sprintf("%s: %v", c.Host(), err)
	}
	all, cerr := c.AllGatherBytes([]byte(msg))
	if cerr != nil {
		if err != nil {
			return fmt.Errorf("prepare: rank %d: %w (and %s: %v)", c.Rank(), err, phase, cerr)
		}
		return fmt.Errorf("prepare: %s: %w", phase, cerr)
	}
	if err != nil {
		return fmt.Errorf("prepare: rank %d: %w", c.Rank(), err)
	}
	for r, m := range all {
		if len(m) > 0 {
			return fmt.Errorf("prepare: %s: rank %d failed on %s", phase, r, m)
		}
	}
	return nil
}

// plan cuts the inputs into units, assigns them by size (the order in
// which phase 1 claims them) and numbers the lines of the byte ranges.
func (w *distWork) plan(cfg Config, inputs [][]corpus.Input, unitBytes int64, fp string) error {
	t := startClock()
	us, err := planUnits(cfg, inputs, unitBytes)
	if err := agree(w.c, "plan units", err); err != nil {
		return err
	}
	w.units, w.owner = us, balance(us, w.c.Size())
	err = numberLines(w.c, cfg, w.units, w.owner)
	w.record("plan", t)
	return err
}

// phase1 reads, extracts and cleans the units this rank claims (skipping
// those a previous run finished), then makes every rank's units known.
func (w *distWork) phase1(ctx context.Context, fp string, unitBytes int64) error {
	t := startClock()
	var err error
	var took []int
	if w.hooks != nil && w.hooks.beforeClaims != nil {
		w.hooks.beforeClaims()
	}
	for _, i := range claimOrder(w.owner, w.c.Size(), w.c.Rank()) {
		ok, e := w.claim(i)
		if e != nil {
			err = e
			break
		}
		if !ok {
			continue
		}
		took = append(took, i)
		u := w.units[i]
		key := unitKey(fp, unitBytes, u)
		if m := w.loadUnit(u, key); m != nil {
			w.metas[i] = m
			w.stats.UnitsReused++
			continue
		}
		m, e := w.p.readUnit(ctx, w, u, key)
		if e != nil {
			err = fmt.Errorf("unit %d (%s): %w", i, describe(u), e)
			break
		}
		w.metas[i] = m
	}
	if w.hooks != nil && w.hooks.afterClaims != nil {
		w.hooks.afterClaims()
	}
	for _, m := range w.metas {
		w.stats.Docs += m.InDocs
	}
	w.record("read_extract_clean", t)
	if err := agree(w.c, "read, extract and clean", err); err != nil {
		return err
	}
	return w.settleOwners(took)
}

func describe(u unit) string {
	p := u.Parts[0]
	switch {
	case len(u.Parts) > 1:
		return fmt.Sprintf("%s and %d more", p.Input.Path, len(u.Parts)-1)
	case p.Whole:
		return p.Input.Path
	}
	return fmt.Sprintf("%s bytes %d-%d", p.Input.Path, p.Start, p.End)
}

// docOf is the spilled form of an item's document.
func docOf(it *item) document.Doc {
	return document.Doc{ID: it.doc.ID, Source: it.doc.Source, Text: it.doc.Text, Meta: it.doc.Meta}
}

// sortedKeys returns m's keys in ascending order.
func sortedKeys[V any](m map[int]V) []int {
	k := make([]int, 0, len(m))
	for i := range m {
		k = append(k, i)
	}
	slices.Sort(k)
	return k
}

// RunLaunched runs kestrel prepare as it was launched: one process (Run)
// when the environment names no other ranks, else this rank's part of a
// distributed run (RunDist over comm.FromEnv, with log lines tagged by
// rank). opts.Comm is filled here.
func RunLaunched(ctx context.Context, cfg Config, opts DistOptions) (*datareport.Report, error) {
	c, err := comm.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer c.Close()
	if dir := os.Getenv(CPUProfileEnv); dir != "" {
		stop, err := startCPUProfile(dir, c)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if c.Size() == 1 {
		return Run(ctx, cfg, opts.RunOptions)
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	opts.Log, opts.Comm = opts.Log.With("rank", c.Rank()), c
	return RunDist(ctx, cfg, opts)
}

// CPUProfileEnv names the environment variable that, set to a directory,
// makes kestrel prepare write a CPU profile of each process there
// (cpu-<rank>-of-<ranks>.pprof; `go tool pprof` reads it): where a rank
// spends its time.
const CPUProfileEnv = "KESTREL_PREPARE_CPUPROFILE"

// startCPUProfile starts this process's CPU profile in dir; stop ends it.
func startCPUProfile(dir string, c comm.Comm) (stop func(), err error) {
	path := filepath.Join(dir, fmt.Sprintf("cpu-%d-of-%d.pprof", c.Rank(), c.Size()))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("prepare: %s: %w", CPUProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("prepare: %s: %s: %w", CPUProfileEnv, path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			slog.Warn("prepare: CPU profile incomplete", "path", path, "err", err)
		}
	}, nil
}
