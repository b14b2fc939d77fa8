package prepare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/data/clean"
	"github.com/kestrel-lm/kestrel/internal/data/corpus"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// pipelineVersion changes when the output of the same config would change.
// 2: the web and books filter sets gained language ID and the
// compression-ratio rule.
const pipelineVersion = 2

// RunOptions are the per-invocation settings of Run.
type RunOptions struct {
	Out      string                   // dataset directory to create
	Strict   bool                     // malformed input is an error
	Force    bool                     // rebuild even when Out is up to date
	Summary  func(*datareport.Report) // hears the report at the end (rank 0): built, or found up to date (UpToDate); the command prints it (nil = none)
	Progress io.Writer                // progress bar target when it is a terminal (nil = none)
	Log      *slog.Logger
	// StopAfter, when > 0, makes the run fail after that many documents
	// (tests use it to prove a failed run leaves no dataset behind).
	StopAfter int64
}

// item is one document travelling through the pipeline.
type item struct {
	seq    int64
	src    int
	doc    document.Doc
	inLen  int // bytes as read (HTML bytes for WARC responses)
	rej    *RejectRecord
	hit    bool     // decontam n-gram hit (acted on in pass 2)
	html   bool     // read as HTML, extracted in stage A
	cleanB int      // bytes after extraction, before filters
	hash   uint64   // exact-dedup hash of the filtered text
	keys   []uint64 // distributed runs: near-dup band keys (nil: no words)
}

// Run executes the pipeline and writes the dataset to opts.Out atomically:
// everything goes to a temporary sibling directory that is renamed into
// place only after report.json is written. On any error (or cancellation)
// the temporary directory is removed and opts.Out is untouched.
func Run(ctx context.Context, cfg Config, opts RunOptions) (*datareport.Report, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Out == "" {
		return nil, errors.New("prepare: no output directory (--out)")
	}
	runStart := time.Now()
	cfg, inputs, fp, err := resolveAll(cfg, opts.Strict)
	if err != nil {
		return nil, err
	}
	if err := removeLeftovers(opts); err != nil {
		return nil, err
	}
	if old := upToDate(opts, fp); old != nil {
		summarize(opts, old)
		return old, nil
	}
	if err := checkOut(opts.Out); err != nil {
		return nil, err
	}
	out := filepath.Clean(opts.Out)
	dir, err := atomicfile.NewDir(filepath.Dir(out), filepath.Base(out))
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer dir.Abort()
	tmp := dir.Path()
	p, err := newPipeline(cfg, opts, inputs, tmp)
	if err != nil {
		return nil, err
	}
	rep, err := p.run(ctx)
	if err != nil {
		return nil, err
	}
	rep.TimingsS["total"] = time.Since(runStart).Seconds()
	rep.Fingerprint = fp
	rep.Complete = true
	rep.Out = opts.Out
	rb, err := datareport.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, datareport.FileName), rb, 0o644); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := dir.Install(out); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	summarize(opts, rep)
	return rep, nil
}

// removeLeftovers removes the temporary directories a killed run left
// beside opts.Out (only atomicfile's temporary names for this output) and
// logs what it removed or put back.
func removeLeftovers(opts RunOptions) error {
	out := filepath.Clean(opts.Out)
	lo, err := atomicfile.RemoveStaleTemps(filepath.Dir(out), filepath.Base(out))
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	for _, p := range lo.Removed {
		opts.Log.Info("prepare: removed the temporary directory of an interrupted run", "path", p)
	}
	if lo.Restored != "" {
		opts.Log.Warn("prepare: put back the dataset an interrupted run had moved aside", "from", lo.Restored, "to", out)
	}
	for _, p := range lo.InUse {
		opts.Log.Warn("prepare: another prepare is writing this output", "temporary", p)
	}
	return nil
}

// upToDate returns the complete dataset at opts.Out built with
// fingerprint fp, marked up to date, or nil (also with opts.Force).
func upToDate(opts RunOptions, fp string) *datareport.Report {
	if opts.Force {
		return nil
	}
	old, err := datareport.Load(opts.Out)
	if err != nil || !old.Complete || old.Fingerprint != fp {
		return nil
	}
	old.UpToDate, old.Out = true, opts.Out
	return old
}

// summarize hands the run's report to opts.Summary, if any.
func summarize(opts RunOptions, rep *datareport.Report) {
	if opts.Summary != nil && rep != nil {
		opts.Summary(rep)
	}
}

type pipeline struct {
	cfg     Config
	opts    RunOptions
	inputs  [][]corpus.Input
	tmp     string
	workers int
	filters []*clean.Filter // nil = no filter for that source
	rewrite []bool
	exact   *exactDedup
	near    *nearDedup
	dec     *decontaminator
	rep     *datareport.Report
	stats   []*datareport.SourceReport
	mu      sync.Mutex // guards problem/skip counters written from the reader

	readDocs, readBytes atomic.Int64
	inBytes             atomic.Int64 // raw input bytes consumed (progress)
	hitIDs              map[string]bool
	itemSeen            map[string]bool
	uniq                []*datareport.SourceReport // one per distinct source name, in config order
	sizes               map[string][]int32         // kept bytes per doc per source (percentiles)
	timings             map[string]float64
}

func newPipeline(cfg Config, opts RunOptions, inputs [][]corpus.Input, tmp string) (*pipeline, error) {
	p := &pipeline{cfg: cfg, opts: opts, inputs: inputs, tmp: tmp, hitIDs: map[string]bool{}, itemSeen: map[string]bool{}, sizes: map[string][]int32{}, timings: map[string]float64{}}
	p.workers = cfg.Workers
	if p.workers <= 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	p.uniq, p.stats = sourceStats(cfg)
	for _, s := range cfg.Sources {
		fc, on, err := s.filterConfig()
		if err != nil {
			return nil, err
		}
		var f *clean.Filter
		if on {
			if f, err = clean.New(fc); err != nil {
				return nil, fmt.Errorf("source %q: %w", s.Name, err)
			}
		}
		p.filters = append(p.filters, f)
		p.rewrite = append(p.rewrite, s.Rewrite == nil || *s.Rewrite)
	}
	var err error
	if cfg.Dedup.Exact {
		p.exact = newExact()
	}
	if cfg.Dedup.Near {
		if p.near, err = newNear(cfg.Dedup.MinHash); err != nil {
			return nil, fmt.Errorf("prepare.dedup: %w", err)
		}
	}
	if cfg.Decontam.Enabled {
		t0 := time.Now()
		if p.dec, err = newDecontam(cfg.Decontam.Index); err != nil {
			return nil, fmt.Errorf("prepare.decontam: %w", err)
		}
		p.timings["decontam_index_build"] = time.Since(t0).Seconds()
	}
	p.rep = &datareport.Report{Version: pipelineVersion, Created: time.Now().UTC().Format(time.RFC3339), Workers: p.workers,
		Rejects: map[string]int64{}, Problems: datareport.ProblemReport{Counts: map[string]int64{}}, Overlap: map[string]*datareport.Overlap{}}
	return p, nil
}

func (p *pipeline) run(ctx context.Context) (*datareport.Report, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := p.startProgress(ctx)
	defer stopProgress()

	rejects, err := newRejectWriters(filepath.Join(p.tmp, "rejects"))
	if err != nil {
		return nil, err
	}
	defer rejects.abort()
	spillPath := filepath.Join(p.tmp, "candidates.jsonl.zst")
	spill, err := createZstdJSONL(spillPath)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer spill.close()

	// Pass 1: read → extract + clean (parallel) → exact dedup (ordered) →
	// near-dup signatures + decontam check (parallel) → spill survivors.
	t1 := time.Now()
	src, readErr := readInto(ctx, cancel, p.workers, func(out chan<- *item) error { return p.read(ctx, out) })
	a := orderedMap(ctx, src, p.workers, p.stageA)
	b := make(chan *item, 4*p.workers)
	go func() {
		defer close(b)
		for it := range a {
			p.stageExact(it)
			b <- it
		}
	}()
	c := orderedMap(ctx, b, p.workers, p.stageB)
	err = sinkAll(ctx, cancel, c, readErr, func(it *item) error {
		if it.rej != nil {
			return rejects.write(*it.rej)
		}
		if it.hit {
			p.hitIDs[it.doc.ID] = true
		}
		return spill.write(docOf(it))
	})
	if err != nil {
		return nil, err
	}
	if err := spill.close(); err != nil {
		return nil, err
	}
	p.timings["pass1_read_clean_dedup_signatures"] = time.Since(t1).Seconds()

	// Pass 2: near-duplicate decisions, decontamination, kept shards.
	t2 := time.Now()
	if err := p.pass2(ctx, spillPath, rejects); err != nil {
		return nil, err
	}
	os.Remove(spillPath)
	if err := rejects.close(); err != nil {
		return nil, err
	}
	p.rep.RejectFiles = rejects.files()
	p.timings["pass2_near_decontam_write"] = time.Since(t2).Seconds()

	// Tokenizer and token shards.
	if m := p.cfg.Tokenizer.Mode; m == "train" || m == "load" {
		t3 := time.Now()
		if err := p.tokenize(ctx); err != nil {
			return nil, err
		}
		p.timings["tokenize_shards"] = time.Since(t3).Seconds()
	}
	p.timings["total"] = time.Since(start).Seconds()
	p.finishReport()
	return p.rep, nil
}

// read streams every source into out, applying per-source limits.
func (p *pipeline) read(ctx context.Context, out chan<- *item) error {
	seq := int64(0)
	for si, s := range p.cfg.Sources {
		st := p.stats[si]
		opts := p.readOptions(si)
		var fileSize, fileCur int64
		opts.OnFile = func(path string, size int64) {
			p.inBytes.Add(fileSize - fileCur) // the rest of the previous file
			fileSize, fileCur = size, 0
			st.Files++
		}
		opts.OnBytes = func(n int64) { p.inBytes.Add(n - fileCur); fileCur = n }
		var n, bytes int64
		for d, err := range corpus.Read(ctx, p.inputs[si], opts) {
			if err != nil {
				return fmt.Errorf("source %q: %w", s.Name, err)
			}
			if p.opts.StopAfter > 0 && seq >= p.opts.StopAfter {
				return fmt.Errorf("prepare: stopped after %d documents (StopAfter)", seq)
			}
			it := newItem(seq, si, d)
			seq++
			n++
			bytes += int64(it.inLen)
			if err := p.send(ctx, out, it); err != nil {
				return err
			}
			if s.reachedLimit(n, bytes) {
				st.Truncated = true
				break
			}
		}
		p.inBytes.Add(fileSize - fileCur)
	}
	return nil
}

// stageA: HTML extraction and quality filters (runs in parallel).
func (p *pipeline) stageA(it *item) {
	d := &it.doc
	if d.NeedsExtract() {
		if err := corpus.Extract(d); err != nil {
			it.rej = &RejectRecord{ID: d.ID, Source: d.Source, Stage: datareport.StageExtract, Rule: "no_main_content", Detail: err.Error()}
			return
		}
	}
	it.cleanB = len(d.Text)
	if f := p.filters[it.src]; f != nil {
		text, v := f.Apply(d.Text)
		if !v.Keep {
			it.rej = &RejectRecord{ID: d.ID, Source: d.Source, Stage: datareport.StageClean, Rule: v.Stage + "/" + v.Rule, Detail: v.Detail}
			return
		}
		if p.rewrite[it.src] {
			d.Text = text
		}
	}
	if p.exact != nil {
		it.hash = p.exact.hash(d.Text)
	}
}

// stageExact runs in sequence order so that the first occurrence is kept.
func (p *pipeline) stageExact(it *item) {
	if !p.countEarly(it) || p.exact == nil {
		return
	}
	first, dup := p.exact.first(it.doc.ID, it.hash)
	it.rej = p.exactStage(it.doc, it.src, first, dup)
}

// countEarly counts the read, extract and clean stages of it (and its
// reject, if one of them rejected it); it reports whether it survived them.
func (p *pipeline) countEarly(it *item) bool {
	st := p.stats[it.src]
	st.Stage(datareport.StageRead).Add(true, it.inLen)
	st.Stage(datareport.StageRead).Add(false, it.inLen)
	if it.html {
		st.Stage(datareport.StageExtract).Add(true, it.inLen)
		if it.rej != nil && it.rej.Stage == datareport.StageExtract {
			p.count(it)
			return false
		}
		st.Stage(datareport.StageExtract).Add(false, it.cleanB)
	}
	st.Stage(datareport.StageClean).Add(true, it.cleanB)
	if it.rej != nil {
		p.count(it)
		return false
	}
	st.Stage(datareport.StageClean).Add(false, len(it.doc.Text))
	return true
}

// stageB: near-dup signatures and the decontamination check (parallel).
func (p *pipeline) stageB(it *item) {
	if it.rej != nil {
		return
	}
	if p.near != nil {
		p.near.add(it.doc.ID, it.doc.Text)
	}
	if p.dec != nil {
		it.hit = p.dec.check(it.doc.ID, it.doc.Text).Hit
	}
}

// count records a reject in the report counters (called in order).
func (p *pipeline) count(it *item) { p.countRej(it.src, *it.rej) }

func (p *pipeline) srcIndex(name string) int {
	for i, s := range p.cfg.Sources {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// pass2 applies near-dup drop decisions and decontamination and writes the
// kept documents.
func (p *pipeline) pass2(ctx context.Context, spillPath string, rejects *rejectWriters) error {
	var drop map[string]string
	var clusters []Cluster
	if p.near != nil {
		t := time.Now()
		var err error
		drop, clusters, err = p.near.finish()
		if err != nil {
			return fmt.Errorf("near dedup: %w", err)
		}
		p.timings["near_dedup_clusters"] = time.Since(t).Seconds()
	}
	hot := p.hotspots(clusters)
	hotByKept := map[string]*datareport.Hotspot{}
	for i := range hot {
		hotByKept[hot[i].KeptID] = &hot[i]
	}
	docsDir := filepath.Join(p.tmp, "docs")
	if err := os.MkdirAll(docsDir, 0o755); err != nil {
		return err
	}
	shards := newShardSet(docsDir, p.cfg.ShardBytes)
	defer shards.abort()
	n := 0
	for rec, err := range ReadDocs([]string{spillPath}) {
		if err != nil {
			return err
		}
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		si := p.srcIndex(rec.Source)
		if p.near != nil {
			kept, ok := drop[rec.ID]
			if rj := p.nearStage(rec, si, kept, ok); rj != nil {
				if err := rejects.write(*rj); err != nil {
					return err
				}
				continue
			}
		}
		if h := hotByKept[rec.ID]; h != nil {
			h.Sample = sample(rec.Text, p.cfg.Report.SampleChars)
		}
		if p.dec != nil {
			var m decontam.Match // only the documents pass 1 saw hit are checked again
			if p.hitIDs[rec.ID] {
				m = p.dec.check(rec.ID, rec.Text)
				p.recordOverlap(rec, m)
			}
			rj, cut := p.decontamStage(&rec, si, m)
			if rj != nil {
				if err := rejects.write(*rj); err != nil {
					return err
				}
				continue
			}
			if cut {
				p.rep.DecontamCutDocs++
			}
		}
		p.keep(rec, si, p.sizes)
		if err := shards.write(rec); err != nil {
			return err
		}
	}
	files, err := shards.close()
	if err != nil {
		return err
	}
	p.rep.DocShards = files
	p.rep.Hotspots = hot
	p.rep.NearClusters = len(clusters)
	return nil
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func sample(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= n {
		return text
	}
	cut := n
	for cut > 0 && !isRuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Fingerprint returns the hash Run records in report.json for cfg and the
// current state of its inputs (resolved config, kestrel's version, input
// paths, sizes and modification times, and the contents of the eval files
// decontamination reads). A dataset whose report.json is complete and
// carries the same fingerprint is up to date.
func Fingerprint(cfg Config, strict bool) (string, error) {
	_, _, fp, err := resolveAll(cfg, strict)
	return fp, err
}

// UpToDate reports whether dir holds a complete dataset built from cfg and
// the inputs as they are now.
func UpToDate(cfg Config, dir string, strict bool) (bool, error) {
	r, err := datareport.Load(dir)
	if err != nil {
		return false, nil
	}
	fp, err := Fingerprint(cfg, strict)
	if err != nil {
		return false, err
	}
	return r.Complete && r.Fingerprint == fp, nil
}
