package prepare

import (
	"context"
	"fmt"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/data/corpus"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// This file is the one copy of what happens to a document the same way in
// one process (pipeline.go) and on every rank of a distributed run
// (dist_unit.go, dist_write.go): the per-source counters, the reader's
// problem and skip hooks, and the decisions after the clean stage (exact
// duplicate, near duplicate, decontamination drop or cut, kept). The two
// drivers differ only in where the decisions come from (one process's
// in-memory indexes; the ranks' exchanges) and where the results go.

// sourceStats returns one report per distinct source name, in config
// order (uniq), and per configured source the report it counts into.
func sourceStats(cfg Config) (uniq, stats []*datareport.SourceReport) {
	for _, s := range cfg.Sources {
		var sr *datareport.SourceReport
		for _, u := range uniq {
			if u.Name == s.Name {
				sr = u
			}
		}
		if sr == nil {
			sr = datareport.NewSourceReport(s.Name)
			uniq = append(uniq, sr)
		}
		stats = append(stats, sr)
	}
	return uniq, stats
}

// readOptions is source si's reader configuration with the hooks that
// count its problems and skipped records into its report and the run's
// problem list (a fatal problem, outside strict mode, is also logged).
func (p *pipeline) readOptions(si int) corpus.Options {
	s, st := p.cfg.Sources[si], p.stats[si]
	opts := s.readOptions(p.cfg)
	opts.Strict = p.opts.Strict
	opts.OnProblem = func(pr corpus.Problem) {
		p.mu.Lock()
		defer p.mu.Unlock()
		st.Problems[pr.Kind]++
		p.rep.Problems.Counts[pr.Kind]++
		p.rep.Problems.Total++
		if pr.Fatal {
			p.rep.Problems.FilesSkipped++
			if !p.opts.Strict { // strict: the run's error says it
				p.opts.Log.Warn("prepare: input file skipped from here on", "source", s.Name, "file", pr.File, "kind", pr.Kind, "at", fmt.Sprintf("%s %d", pr.Unit, pr.Pos), "reason", pr.Detail)
			}
		}
		if len(p.rep.Problems.List) < p.cfg.Report.MaxProblems {
			p.rep.Problems.List = append(p.rep.Problems.List, pr.String())
		}
	}
	opts.OnSkip = func(_, kind string) {
		p.mu.Lock()
		st.Skipped[kind]++
		p.mu.Unlock()
	}
	return opts
}

// readInto runs read in a goroutine that feeds the returned channel with
// room for 4n items and closes it when read returns; an error of read
// cancels the run and is left in *readErr before the channel closes.
func readInto(ctx context.Context, cancel func(), n int, read func(chan<- *item) error) (src <-chan *item, readErr *error) {
	ch := make(chan *item, 4*n)
	readErr = new(error)
	go func() {
		defer close(ch)
		if *readErr = read(ch); *readErr != nil {
			cancel()
		}
	}()
	return ch, readErr
}

// sinkAll passes every item of in, in order, to sink. After sink's first
// error (or the run's cancellation) it cancels the read and drains what is
// in flight. It returns the first of sink's error, the reader's (*readErr,
// from readInto) and the cancellation.
func sinkAll(ctx context.Context, cancel func(), in <-chan *item, readErr *error, sink func(*item) error) error {
	var sinkErr error
	for it := range in {
		if sinkErr != nil || ctx.Err() != nil {
			continue // drain
		}
		if sinkErr = sink(it); sinkErr != nil {
			cancel() // stop reading; drain what is in flight
		}
	}
	if sinkErr != nil {
		return sinkErr
	}
	if *readErr != nil {
		return *readErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// newItem is document d, the seq-th read of source si, entering the
// pipeline.
func newItem(seq int64, si int, d document.Doc) *item {
	return &item{seq: seq, src: si, doc: d, inLen: d.RawLen(), html: d.NeedsExtract()}
}

// send counts it as read and passes it to out; it returns the context's
// error when the run stops first.
func (p *pipeline) send(ctx context.Context, out chan<- *item, it *item) error {
	p.readDocs.Add(1)
	p.readBytes.Add(int64(it.inLen))
	select {
	case out <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reachedLimit reports whether n documents of bytes bytes read from s
// reach its max_docs or max_bytes (the reader stops there, truncated).
func (s Source) reachedLimit(n, bytes int64) bool {
	return (s.MaxDocs > 0 && n >= s.MaxDocs) || (s.MaxBytes > 0 && bytes >= s.MaxBytes)
}

// exactStage counts rec (of source si) into the exact-dedup stage; dup
// says it repeats the text of the document first, which makes it a reject.
func (p *pipeline) exactStage(rec document.Doc, si int, first string, dup bool) *RejectRecord {
	st := p.stats[si]
	st.Stage(datareport.StageExact).Add(true, len(rec.Text))
	if dup {
		rj := &RejectRecord{ID: rec.ID, Source: rec.Source, Stage: datareport.StageExact, Rule: "exact_duplicate", Detail: "same normalised text as " + first}
		p.countRej(si, *rj)
		return rj
	}
	st.Stage(datareport.StageExact).Add(false, len(rec.Text))
	return nil
}

// nearStage counts rec (of source si) into the near-dedup stage; kept is
// the id its cluster keeps (inCluster false: it is in none), and another
// id than rec's makes it a reject.
func (p *pipeline) nearStage(rec document.Doc, si int, kept string, inCluster bool) *RejectRecord {
	st := p.stats[si]
	st.Stage(datareport.StageNear).Add(true, len(rec.Text))
	if inCluster && kept != rec.ID {
		rj := &RejectRecord{ID: rec.ID, Source: rec.Source, Stage: datareport.StageNear, Rule: "minhash", Detail: "near-duplicate of " + kept}
		p.countRej(si, *rj)
		return rj
	}
	st.Stage(datareport.StageNear).Add(false, len(rec.Text))
	return nil
}

// decontamStage counts rec (of source si) into the decontamination stage
// and acts on its match m (nothing when !m.Hit): in drop mode a hit is a
// reject; in cut mode the matching spans are cut from rec's text (cut is
// true) unless fewer than min_keep_bytes would be left, which is a reject.
func (p *pipeline) decontamStage(rec *document.Doc, si int, m decontam.Match) (rj *RejectRecord, cut bool) {
	st := p.stats[si]
	st.Stage(datareport.StageDecontam).Add(true, len(rec.Text))
	if m.Hit {
		h := m.Hits[0]
		if p.cfg.Decontam.Index.Mode != decontam.ModeCut {
			rj = &RejectRecord{ID: rec.ID, Source: rec.Source, Stage: datareport.StageDecontam, Rule: h.EvalSet, Detail: fmt.Sprintf("shares %q with %s (%d eval items)", h.NGram, h.ItemID, len(m.Hits))}
			p.countRej(si, *rj)
			return rj, false
		}
		text := p.dec.cut(rec.Text, m)
		if len(strings.TrimSpace(text)) < p.cfg.Decontam.MinKeepBytes {
			rj = &RejectRecord{ID: rec.ID, Source: rec.Source, Stage: datareport.StageDecontam, Rule: h.EvalSet, Detail: fmt.Sprintf("only %d bytes left after cutting %d spans", len(text), len(m.Spans))}
			p.countRej(si, *rj)
			return rj, false
		}
		if rec.Meta == nil {
			rec.Meta = map[string]any{}
		}
		rec.Meta["decontam_cut"] = len(rec.Text) - len(text)
		rec.Text = text
		cut = true
	}
	st.Stage(datareport.StageDecontam).Add(false, len(rec.Text))
	return nil, cut
}

// keep counts rec (of source si) as kept and adds its size to sizes (the
// report's per-source percentiles).
func (p *pipeline) keep(rec document.Doc, si int, sizes map[string][]int32) {
	st := p.stats[si]
	st.Kept.Docs++
	st.Kept.Bytes += int64(len(rec.Text))
	sizes[rec.Source] = append(sizes[rec.Source], int32(min(len(rec.Text), 1<<31-1)))
}

// countRej counts a reject in the run's and its source's counters.
func (p *pipeline) countRej(si int, rj RejectRecord) {
	p.rep.Rejects[rj.Stage+"/"+rj.Rule]++
	p.stats[si].Rejects[rj.Stage+"/"+rj.Rule]++
}
