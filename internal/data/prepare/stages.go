package prepare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/dedup"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// This file adapts the stage libraries (dedup, decontam, tokenizer,
// shards) to the pipeline.

// Cluster is a near-duplicate cluster: Kept is the document kept.
type Cluster struct {
	Kept    string
	Members []string
}

// exactDedup decides exact duplicates; hash runs in parallel, seen in order.
type exactDedup struct {
	x    *dedup.Exact
	seen map[uint64]string
}

func newExact() *exactDedup { return &exactDedup{x: dedup.NewExact(), seen: map[uint64]string{}} }

func (e *exactDedup) hash(text string) uint64 { return e.x.Hash(text) }

// first records h for id and returns the id that had h first.
func (e *exactDedup) first(id string, h uint64) (string, bool) {
	if f, ok := e.seen[h]; ok {
		return f, true
	}
	e.seen[h] = id
	return id, false
}

// nearDedup wraps dedup.Near.
type nearDedup struct{ n *dedup.Near }

func newNear(cfg dedup.Config) (*nearDedup, error) {
	n, err := dedup.NewNear(cfg)
	if err != nil {
		return nil, err
	}
	return &nearDedup{n: n}, nil
}

func (d *nearDedup) add(id, text string) { d.n.Add(id, text) }

func (d *nearDedup) bytesPerDoc() int { return d.n.BytesPerDoc() }

func (d *nearDedup) finish() (map[string]string, []Cluster, error) {
	res, err := d.n.Finish()
	if err != nil {
		return nil, nil, err
	}
	cl := make([]Cluster, len(res.Clusters))
	for i, c := range res.Clusters {
		cl[i] = Cluster{Kept: c.Kept, Members: c.Members}
	}
	return res.Dropped, cl, nil
}

type decontaminator struct {
	x    *decontam.Index
	sets []string
}

func newDecontam(cfg decontam.Config) (*decontaminator, error) {
	x, err := decontam.Build(cfg)
	if err != nil {
		return nil, err
	}
	d := &decontaminator{x: x}
	for _, s := range x.Stats() {
		d.sets = append(d.sets, s.Name)
	}
	return d, nil
}

func (d *decontaminator) check(id, text string) decontam.Match { return d.x.Check(id, text) }

func (d *decontaminator) cut(text string, m decontam.Match) string { return d.x.Cut(text, m) }

func (p *pipeline) evalSets() []string {
	if p.dec == nil {
		return nil
	}
	s := append([]string(nil), p.dec.sets...)
	sort.Strings(s)
	return s
}

// rejectWriters holds one rejects/<stage>.jsonl.zst per stage, opened lazily.
type rejectWriters struct {
	dir string
	tag string // put after the stage in file names (distributed runs: "-uNNNNNN")
	w   map[string]*zstdJSONL
	fs  []datareport.ShardFile
}

func newRejectWriters(dir string) (*rejectWriters, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return &rejectWriters{dir: dir, w: map[string]*zstdJSONL{}}, nil
}

func (r *rejectWriters) write(rec RejectRecord) error {
	w := r.w[rec.Stage]
	if w == nil {
		var err error
		w, err = createZstdJSONL(filepath.Join(r.dir, rec.Stage+r.tag+".jsonl.zst"))
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		r.w[rec.Stage] = w
	}
	return w.write(rec)
}

func (r *rejectWriters) close() error {
	names := make([]string, 0, len(r.w))
	for k := range r.w {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		w := r.w[k]
		if err := w.close(); err != nil {
			return err
		}
		r.fs = append(r.fs, datareport.ShardFile{Path: "rejects/" + filepath.Base(w.path), Source: k, Docs: w.docs, Bytes: w.n})
	}
	r.w = map[string]*zstdJSONL{}
	return nil
}

func (r *rejectWriters) files() []datareport.ShardFile { return r.fs }

func (r *rejectWriters) abort() {
	for _, w := range r.w {
		w.close()
	}
}

// tokenize trains or loads the tokenizer and writes token shards with
// shards.Build into the dataset directory.
func (p *pipeline) tokenize(ctx context.Context) error {
	tc := p.cfg.Tokenizer
	var paths []string
	for _, f := range p.rep.DocShards {
		paths = append(paths, filepath.Join(p.tmp, f.Path))
	}
	tok, tokPath, err := p.tokenizerFor(ctx, paths)
	if err != nil {
		return err
	}
	scfg := tc.Shards
	if scfg.Workers == 0 {
		scfg.Workers = p.workers
	}
	if scfg.Provenance, err = p.provenance(); err != nil {
		return err
	}
	m, err := shards.Build(ctx, ReadDocs(paths), tok, tokPath, scfg, p.tmp)
	if err != nil {
		return fmt.Errorf("prepare: shards: %w", err)
	}
	p.tokenReport(tok, m)
	return nil
}

// tokenReport records the tokenizer stage in the report.
func (p *pipeline) tokenReport(tok *tokenizer.Tokenizer, m *shards.Manifest) {
	tr := &datareport.TokenReport{Mode: p.cfg.Tokenizer.Mode, Tokenizer: "tokenizer.json", VocabSize: tok.VocabSize(), Manifest: "manifest.json", DatasetHash: m.DatasetHash, Tokens: map[string]int64{}, TotalTokens: m.TotalTokens}
	for _, s := range m.Sources {
		tr.Tokens[s.Source] = s.TrainTokens + s.ValTokens
	}
	p.rep.Tokens = tr
}

// tokenizerFor loads the configured tokenizer or trains one on the kept
// documents of paths (in order, at most train_max_bytes per source) and
// returns it with the path recorded in the manifest.
func (p *pipeline) tokenizerFor(ctx context.Context, paths []string) (*tokenizer.Tokenizer, string, error) {
	tc := p.cfg.Tokenizer
	var tok *tokenizer.Tokenizer
	var tokPath string
	var err error
	switch tc.Mode {
	case "load":
		tokPath = tc.Path
		if tok, err = tokenizer.Load(tokPath); err != nil {
			return nil, "", fmt.Errorf("prepare.tokenizer.path: %w", err)
		}
	case "train":
		var readErr error
		perSource := map[string]int64{}
		docs := func(yield func(string) bool) {
			for rec, err := range ReadDocs(paths) {
				if err != nil {
					readErr = err
					return
				}
				if tc.TrainMaxBytes > 0 && perSource[rec.Source] >= tc.TrainMaxBytes {
					continue
				}
				perSource[rec.Source] += int64(len(rec.Text))
				if !yield(rec.Text) {
					return
				}
			}
		}
		tok, err = tokenizer.Train(ctx, docs, tokenizer.TrainOptions{VocabSize: tc.VocabSize, Pattern: tc.Pattern, Special: nilIfEmpty(tc.Special), Workers: p.workers})
		if err == nil {
			err = readErr
		}
		if err != nil {
			return nil, "", fmt.Errorf("prepare: tokenizer: %w", err)
		}
		tokPath = "trained by kestrel prepare"
	}
	return tok, tokPath, nil
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// provenance records each source's resolved inputs and, when the
// documents were decontaminated, the evaluation sets with the sha256 of
// each file, for the dataset manifest.
func (p *pipeline) provenance() (*shards.Provenance, error) {
	pv := &shards.Provenance{Inputs: map[string][]string{}}
	for i, s := range p.cfg.Sources {
		for _, in := range p.inputs[i] {
			pv.Inputs[s.Name] = append(pv.Inputs[s.Name], in.Path)
		}
	}
	dc := p.cfg.Decontam
	if !dc.Enabled {
		return pv, nil
	}
	pv.Decontam = &shards.DecontamInfo{NGram: dc.Index.NGram, Mode: dc.Index.Mode}
	for _, set := range dc.Index.EvalSets {
		info := shards.EvalSetInfo{Name: set.Name}
		for _, path := range set.Paths {
			h, err := runlog.HashFile(path)
			if err != nil {
				return nil, fmt.Errorf("prepare.decontam eval set %s: %w", set.Name, err)
			}
			info.Files = append(info.Files, shards.FileHash{Path: path, SHA256: h})
		}
		pv.Decontam.EvalSets = append(pv.Decontam.EvalSets, info)
	}
	return pv, nil
}
