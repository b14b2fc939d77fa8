package prepare

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// overlapEv is one contaminated document, replayed on rank 0 in the global
// order to build the report's overlap section as one process does.
type overlapEv struct {
	ID, Source string
	Hits       []decontam.Hit
}

// unitOut is what writing one unit produced, sent to rank 0.
type unitOut struct {
	Idx         int
	Sources     []*datareport.SourceReport
	Rejects     map[string]int64
	Problems    datareport.ProblemReport
	DocShards   []datareport.ShardFile
	RejectFiles []datareport.ShardFile
	Sizes       map[string][]int32
	Overlaps    []overlapEv
	CutDocs     int64
	Samples     map[string]string
}

// pass2 writes this rank's units: exact and near decisions, the
// decontamination check and drop or cut, kept documents to docs/<source>-uNNNNNN-*.
func (w *distWork) pass2(ctx context.Context, dups map[int64]string, drops map[int64]string, hot []datareport.Hotspot) ([]unitOut, error) {
	t := startClock()
	hotIDs := map[string]bool{}
	for _, h := range hot {
		hotIDs[h.KeptID] = true
	}
	var outs []unitOut
	var err error
	for _, i := range w.mine {
		var o unitOut
		if o, err = w.writeUnit(ctx, i, dups, drops, hotIDs); err != nil {
			err = fmt.Errorf("unit %d (%s): %w", i, describe(w.units[i]), err)
			break
		}
		outs = append(outs, o)
	}
	w.record("decontam_write", t)
	return outs, agree(w.c, "write documents", err)
}

func (w *distWork) writeUnit(ctx context.Context, i int, dups map[int64]string, drops map[int64]string, hotIDs map[string]bool) (unitOut, error) {
	p := w.p
	m := w.metas[i]
	o := unitOut{Idx: i, Problems: m.Problems, Sizes: map[string][]int32{}, Samples: map[string]string{}}
	// Fresh copies of the phase-1 counts: a reused meta must not be
	// counted into twice.
	type counts struct {
		Sources []*datareport.SourceReport
		Rejects map[string]int64
	}
	var mc counts
	b, err := gobBytes(counts{m.Sources, m.Rejects})
	if err == nil {
		err = unGob(b, &mc)
	}
	if err != nil {
		return o, err
	}
	o.Sources, o.Rejects = mc.Sources, mc.Rejects
	if o.Rejects == nil {
		o.Rejects = map[string]int64{}
	}
	p.useStats(o.Sources)
	p.rep.Rejects = o.Rejects
	tag := fmt.Sprintf("-u%06d", i)
	rejects, err := newRejectWriters(filepath.Join(p.tmp, "rejects"))
	if err != nil {
		return o, err
	}
	rejects.tag = tag
	defer rejects.abort()
	if err := copyRejects(w.unitPath(i, "rej.zst"), rejects); err != nil {
		return o, err
	}
	docsDir := filepath.Join(p.tmp, "docs")
	if err := os.MkdirAll(docsDir, 0o755); err != nil {
		return o, err
	}
	shards := newShardSet(docsDir, p.cfg.ShardBytes)
	shards.tag = tag
	defer shards.abort()
	k := -1
	for rec, err := range readSpill(w.unitPath(i, "docs.bin")) {
		if err != nil {
			return o, err
		}
		k++
		if k%1024 == 0 && ctx.Err() != nil {
			return o, ctx.Err()
		}
		ref := docRef(i, k)
		si := p.srcIndex(rec.Source)
		rj := w.dedupStages(rec, si, ref, dups, drops)
		if rj == nil && hotIDs[rec.ID] {
			o.Samples[rec.ID] = sample(rec.Text, p.cfg.Report.SampleChars)
		}
		cut := false
		if rj == nil && p.dec != nil {
			// One process checks every exact survivor and acts on the hits
			// that reach this stage; checking only those is the same.
			m := p.dec.check(rec.ID, rec.Text)
			if m.Hit {
				o.Overlaps = append(o.Overlaps, overlapEv{ID: rec.ID, Source: rec.Source, Hits: m.Hits})
			}
			rj, cut = p.decontamStage(&rec, si, m)
		}
		if rj != nil {
			if err := rejects.write(*rj); err != nil {
				return o, err
			}
			continue
		}
		if cut {
			o.CutDocs++
		}
		p.keep(rec, si, o.Sizes)
		if err := shards.write(rec); err != nil {
			return o, err
		}
	}
	if k+1 != len(m.IDs) {
		return o, fmt.Errorf("%s: %d documents, the unit's record says %d (remove %s and rerun)", w.unitPath(i, "docs.bin"), k+1, len(m.IDs), w.dir)
	}
	if o.DocShards, err = shards.close(); err != nil {
		return o, err
	}
	if err := rejects.close(); err != nil {
		return o, err
	}
	o.RejectFiles = rejects.files()
	return o, nil
}

// dedupStages counts the document ref (rec, of source si) into the exact
// and near dedup stages, with the decisions of the exchanges (dups: the
// first copy's id of an exact duplicate; drops: the kept id of its
// near-duplicate cluster), and returns its reject, if one of them rejects it.
func (w *distWork) dedupStages(rec document.Doc, si int, ref int64, dups, drops map[int64]string) *RejectRecord {
	p := w.p
	if p.exact != nil {
		first, dup := dups[ref]
		if rj := p.exactStage(rec, si, first, dup); rj != nil {
			return rj
		}
	}
	if p.near != nil {
		kept, ok := drops[ref]
		return p.nearStage(rec, si, kept, ok)
	}
	return nil
}

// copyRejects copies the phase-1 rejects of a unit into its reject files.
func copyRejects(path string, to *rejectWriters) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer zr.Close()
	dec := json.NewDecoder(zr)
	for n := 1; dec.More(); n++ {
		var r RejectRecord
		if err := dec.Decode(&r); err != nil {
			return fmt.Errorf("%s: record %d: %w", path, n, err)
		}
		if err := to.write(r); err != nil {
			return err
		}
	}
	return nil
}

// finish gathers every rank's units on rank 0, which merges them in the
// global order into the report; then the tokenizer stage (tokens) runs
// and rank 0 writes report.json with every rank's statistics.
func (w *distWork) finish(ctx context.Context, outs []unitOut, nClusters int, hot []datareport.Hotspot, fp string, runStart time.Time) (*datareport.Report, error) {
	p := w.p
	b, err := gobBytes(outs)
	if err != nil {
		return nil, err
	}
	all, err := w.c.GatherBytes(b, 0)
	if err != nil {
		return nil, fmt.Errorf("prepare: gather results: %w", err)
	}
	if w.c.Rank() == 0 {
		err = w.merge(all, nClusters, hot)
	}
	if err := agree(w.c, "merge results", err); err != nil {
		return nil, err
	}
	if m := p.cfg.Tokenizer.Mode; m == "train" || m == "load" {
		t := startClock()
		if err := w.tokens(ctx, outs); err != nil {
			return nil, err
		}
		w.record("tokenize_shards", t)
	}
	w.stats.PeakRSSBytes = peakRSS()
	w.stats.TimingsS = w.timings
	if b, err = gobBytes(w.stats); err != nil {
		return nil, err
	}
	if all, err = w.c.GatherBytes(b, 0); err != nil {
		return nil, fmt.Errorf("prepare: gather statistics: %w", err)
	}
	if w.c.Rank() != 0 {
		return nil, nil
	}
	dist := &datareport.DistReport{Ranks: w.c.Size(), Units: len(w.units), UnitBytes: w.unitBytes}
	for r, rb := range all {
		var st datareport.RankStats
		if err := unGob(rb, &st); err != nil {
			return nil, fmt.Errorf("prepare: statistics of rank %d: %w", r, err)
		}
		dist.PerRank = append(dist.PerRank, st)
	}
	for k, v := range w.timings {
		p.timings[k] = v
	}
	p.finishReport()
	var inDocs int64
	if t := p.rep.Totals[datareport.StageExact]; t != nil {
		inDocs = t.In.Docs
	}
	for i := range dist.PerRank {
		r := &dist.PerRank[i]
		if inDocs > 0 {
			r.IndexBytesPerDoc = float64(r.ExactIndexBytes+r.NearIndexBytes) / float64(inDocs)
		}
	}
	rep := p.rep
	rep.Dist = dist
	rep.TimingsS["total"] = time.Since(runStart).Seconds()
	rep.Fingerprint = fp
	rep.Complete = true
	rep.Out = p.opts.Out
	rb, err := datareport.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := os.WriteFile(filepath.Join(p.tmp, datareport.FileName), rb, 0o644); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return rep, nil
}

// merge (rank 0) folds every unit's result into the report in unit order.
func (w *distWork) merge(all [][]byte, nClusters int, hot []datareport.Hotspot) error {
	p := w.p
	units := make([]unitOut, len(w.units))
	for r, rb := range all {
		var part []unitOut
		if err := unGob(rb, &part); err != nil {
			return fmt.Errorf("prepare: results of rank %d: %w", r, err)
		}
		for _, u := range part {
			units[u.Idx] = u
		}
	}
	p.freshStats()
	byName := map[string]*datareport.SourceReport{}
	for _, s := range p.uniq {
		byName[s.Name] = s
	}
	p.rep.Rejects = map[string]int64{}
	p.rep.Problems = datareport.ProblemReport{Counts: map[string]int64{}}
	p.rep.DecontamCutDocs = 0
	samples := map[string]string{}
	var docShards, rejFiles []datareport.ShardFile
	for _, u := range units {
		for _, s := range u.Sources {
			mergeSource(byName[s.Name], s)
		}
		for k, v := range u.Rejects {
			p.rep.Rejects[k] += v
		}
		pr := &p.rep.Problems
		pr.Total += u.Problems.Total
		pr.FilesSkipped += u.Problems.FilesSkipped
		for k, v := range u.Problems.Counts {
			pr.Counts[k] += v
		}
		for _, l := range u.Problems.List {
			if len(pr.List) < p.cfg.Report.MaxProblems {
				pr.List = append(pr.List, l)
			}
		}
		for _, ev := range u.Overlaps {
			p.recordOverlap(document.Doc{ID: ev.ID, Source: ev.Source}, decontam.Match{Hit: true, Hits: ev.Hits})
		}
		p.rep.DecontamCutDocs += u.CutDocs
		for s, v := range u.Sizes {
			p.sizes[s] = append(p.sizes[s], v...)
		}
		for id, s := range u.Samples {
			samples[id] = s
		}
		if len(u.DocShards) > 0 {
			w.keptUnits = append(w.keptUnits, u.Idx)
		}
		docShards = append(docShards, u.DocShards...)
		rejFiles = append(rejFiles, u.RejectFiles...)
	}
	// Kept documents per source in the global order: one process lists its
	// shards by path, <source>-NNNNN; here a source's shards are in unit
	// order, then shard order within the unit.
	slices.SortStableFunc(docShards, func(a, b datareport.ShardFile) int { return strings.Compare(a.Source, b.Source) })
	slices.SortStableFunc(rejFiles, func(a, b datareport.ShardFile) int { return strings.Compare(a.Source, b.Source) })
	if hot == nil {
		hot = []datareport.Hotspot{} // as one process reports none
	}
	for i := range hot {
		hot[i].Sample = samples[hot[i].KeptID]
	}
	p.rep.DocShards, p.rep.RejectFiles, p.rep.Hotspots, p.rep.NearClusters = docShards, rejFiles, hot, nClusters
	return nil
}

// tokens is the tokenizer stage over the ranks: rank 0 trains (or loads)
// the tokenizer on the kept documents in the global order — the sample one
// process uses, read from the shared output directory — and broadcasts it;
// every rank writes the token shards of its units (tokens/u<N>/); rank 0
// merges their manifests in unit order into manifest.json.
func (w *distWork) tokens(ctx context.Context, outs []unitOut) error {
	p := w.p
	type wireTok struct {
		JSON []byte
		Path string
	}
	var wt wireTok
	var tok *tokenizer.Tokenizer
	var err error
	if w.c.Rank() == 0 {
		var paths []string
		for _, f := range p.rep.DocShards {
			paths = append(paths, filepath.Join(p.tmp, f.Path))
		}
		if tok, wt.Path, err = p.tokenizerFor(ctx, paths); err == nil {
			wt.JSON, err = tok.Marshal()
		}
	}
	if err := agree(w.c, "tokenizer", err); err != nil {
		return err
	}
	b, err := gobBytes(wt)
	if err != nil {
		return err
	}
	if b, err = w.c.BcastBytes(b, 0); err != nil {
		return fmt.Errorf("prepare: broadcast tokenizer: %w", err)
	}
	if w.c.Rank() != 0 {
		if err = unGob(b, &wt); err == nil {
			tok, err = loadTokenizerBytes(wt.JSON)
		}
	}
	scfg := p.cfg.Tokenizer.Shards
	if scfg.Workers == 0 {
		scfg.Workers = p.workers
	}
	if err == nil {
		scfg.Provenance, err = p.provenance()
	}
	if err == nil {
		for _, o := range outs {
			if len(o.DocShards) == 0 {
				continue
			}
			var paths []string
			for _, f := range o.DocShards {
				paths = append(paths, filepath.Join(p.tmp, f.Path))
			}
			if _, err = shards.Build(ctx, ReadDocs(paths), tok, wt.Path, scfg, filepath.Join(p.tmp, tokenPart(o.Idx))); err != nil {
				err = fmt.Errorf("prepare: shards of unit %d: %w", o.Idx, err)
				break
			}
		}
	}
	if err := agree(w.c, "token shards", err); err != nil {
		return err
	}
	if w.c.Rank() != 0 {
		return nil
	}
	var parts []string
	for _, u := range w.keptUnits {
		parts = append(parts, tokenPart(u))
	}
	var m *shards.Manifest
	if len(parts) == 0 {
		m, err = shards.Build(ctx, ReadDocs(nil), tok, wt.Path, scfg, p.tmp)
	} else {
		m, err = shards.Merge(p.tmp, parts)
	}
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	p.tokenReport(tok, m)
	return nil
}

func tokenPart(u int) string { return filepath.Join("tokens", fmt.Sprintf("u%06d", u)) }

// loadTokenizerBytes loads a tokenizer.json received from rank 0.
func loadTokenizerBytes(b []byte) (*tokenizer.Tokenizer, error) {
	f, err := os.CreateTemp("", "kestrel-tokenizer-*.json")
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return tokenizer.Load(f.Name())
}

// mergeSource adds src's counts to dst.
func mergeSource(dst, src *datareport.SourceReport) {
	dst.Files += src.Files
	dst.Truncated = dst.Truncated || src.Truncated
	for name, c := range src.Stages {
		d := dst.Stage(name)
		d.In.Docs += c.In.Docs
		d.In.Bytes += c.In.Bytes
		d.Out.Docs += c.Out.Docs
		d.Out.Bytes += c.Out.Bytes
	}
	dst.Kept.Docs += src.Kept.Docs
	dst.Kept.Bytes += src.Kept.Bytes
	for k, v := range src.Rejects {
		dst.Rejects[k] += v
	}
	for k, v := range src.Problems {
		dst.Problems[k] += v
	}
	for k, v := range src.Skipped {
		dst.Skipped[k] += v
	}
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes, or 0.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
