package prepare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/data/corpus"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
)

// unitMeta is what reading one unit produced besides its files: the counts
// of the read, extract and clean stages and, per surviving document in
// order, its id and exact-dedup hash. It is saved beside the unit's spill
// so that a rerun can skip the unit.
type unitMeta struct {
	Key      string
	Sources  []*datareport.SourceReport // one per distinct source name, config order
	Rejects  map[string]int64
	Problems datareport.ProblemReport
	IDs      []string
	Hashes   []uint64
	// Keys holds Bands near-dup band keys per survivor (zeros when Empty:
	// a text without words, which near dedup leaves out).
	Keys    []uint64
	Empty   []bool
	InDocs  int64
	InBytes int64
	Seconds float64
}

func (w *distWork) unitPath(u int, suffix string) string {
	return filepath.Join(w.dir, fmt.Sprintf("u%06d.%s", u, suffix))
}

// loadUnit returns the saved result of unit u when its completion marker
// names the current key, else nil.
func (w *distWork) loadUnit(u unit, key string) *unitMeta {
	b, err := os.ReadFile(w.unitPath(u.Idx, "done"))
	if err != nil || strings.TrimSpace(string(b)) != key {
		return nil
	}
	mb, err := os.ReadFile(w.unitPath(u.Idx, "meta.gob"))
	if err != nil {
		return nil
	}
	var m unitMeta
	if unGob(mb, &m) != nil || m.Key != key {
		return nil
	}
	for _, s := range []string{"docs.bin", "rej.zst"} {
		if _, err := os.Stat(w.unitPath(u.Idx, s)); err != nil {
			return nil
		}
	}
	return &m
}

// freshStats points the pipeline's counters at new per-source reports and
// returns them (one per distinct name, config order).
func (p *pipeline) freshStats() []*datareport.SourceReport {
	p.uniq, p.stats = sourceStats(p.cfg)
	return p.uniq
}

// useStats points the pipeline's counters at uniq (from freshStats).
func (p *pipeline) useStats(uniq []*datareport.SourceReport) {
	p.uniq, p.stats = uniq, nil
	for _, s := range p.cfg.Sources {
		for _, u := range uniq {
			if u.Name == s.Name {
				p.stats = append(p.stats, u)
			}
		}
	}
}

// readUnit is phase 1 for one unit: read → extract + clean + exact hash +
// near-dup band keys (parallel, in order) → survivors to u<N>.docs.bin (dist_spill.go), extract and clean
// rejects to u<N>.rej.zst, counts to u<N>.meta.gob, then the completion
// marker u<N>.done.
func (p *pipeline) readUnit(ctx context.Context, w *distWork, u unit, key string) (*unitMeta, error) {
	t0 := time.Now()
	m := &unitMeta{Key: key, Sources: p.freshStats()}
	p.rep.Rejects = map[string]int64{}
	p.rep.Problems = datareport.ProblemReport{Counts: map[string]int64{}}
	docsTmp, rejTmp := w.unitPath(u.Idx, "docs.bin.tmp"), w.unitPath(u.Idx, "rej.zst.tmp")
	spill, err := createSpill(docsTmp)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer spill.close()
	rej, err := createZstdJSONL(rejTmp)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer rej.close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src, readErr := readInto(ctx, cancel, p.workers, func(out chan<- *item) error { return p.readParts(ctx, u, out, m) })
	stage := p.stageA
	bands := 0
	if p.near != nil {
		bands = p.near.n.Bands()
		stage = func(it *item) {
			p.stageA(it)
			if it.rej == nil {
				it.keys, _ = p.near.n.BandKeys(it.doc.Text, nil)
			}
		}
	}
	err = sinkAll(ctx, cancel, orderedMap(ctx, src, p.workers, stage), readErr, func(it *item) error {
		if !p.countEarly(it) {
			return rej.write(*it.rej)
		}
		m.IDs = append(m.IDs, it.doc.ID)
		m.Hashes = append(m.Hashes, it.hash)
		if bands > 0 {
			m.Empty = append(m.Empty, it.keys == nil)
			if it.keys == nil {
				it.keys = make([]uint64, bands)
			}
			m.Keys = append(m.Keys, it.keys...)
		}
		return spill.write(docOf(it))
	})
	if err != nil {
		return nil, err
	}
	if err := spill.close(); err != nil {
		return nil, err
	}
	if err := rej.close(); err != nil {
		return nil, err
	}
	m.Rejects, m.Problems = p.rep.Rejects, p.rep.Problems
	m.Seconds = time.Since(t0).Seconds()
	if err := os.Rename(docsTmp, w.unitPath(u.Idx, "docs.bin")); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := os.Rename(rejTmp, w.unitPath(u.Idx, "rej.zst")); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	b, err := gobBytes(m)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(w.unitPath(u.Idx, "meta.gob"), b); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := atomicfile.WriteFile(w.unitPath(u.Idx, "done"), []byte(key+"\n")); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return m, nil
}

// readParts streams one unit's documents into out (seq from 0), counting
// files, problems and skipped records as read does.
func (p *pipeline) readParts(ctx context.Context, u unit, out chan<- *item, m *unitMeta) error {
	s := p.cfg.Sources[u.Src]
	st := p.stats[u.Src]
	opts := p.readOptions(u.Src)
	opts.OnFile = func(string, int64) { st.Files++ }
	seq := int64(0)
	var bytes int64
	for d, err := range corpus.ReadParts(ctx, u.Parts, opts) {
		if err != nil {
			return fmt.Errorf("source %q: %w", s.Name, err)
		}
		if p.opts.StopAfter > 0 && p.readDocs.Load() >= p.opts.StopAfter {
			return fmt.Errorf("prepare: stopped after %d documents (StopAfter)", p.readDocs.Load())
		}
		it := newItem(seq, u.Src, d)
		seq++
		bytes += int64(it.inLen)
		m.InDocs++
		m.InBytes += int64(it.inLen)
		if err := p.send(ctx, out, it); err != nil {
			return err
		}
		if s.reachedLimit(seq, bytes) {
			st.Truncated = true
			break
		}
	}
	return nil
}
