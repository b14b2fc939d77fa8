package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
)

// QuarantineFile is the quarantine overlay beside a prepared dataset's
// manifest: documents (by id) and whole shards the loader leaves out of
// training, without rewriting any shard.
const QuarantineFile = "quarantine.json"

// Values of data.quarantine besides a file path.
const (
	QuarantineAuto = ""     // the dataset's quarantine.json when it exists
	QuarantineNone = "none" // no overlay, even when the dataset has one
)

// Quarantine is the overlay file: every entry excludes one document or one
// shard of the train split, with the reason and the time it was added.
//
// Effect on the data order: quarantined documents are removed from their
// source's train stream before packing and permutation, so the stream is
// shorter, its number of sequences (slots) changes, and with it every
// permutation of that source and every batch that reads it — from step 1 on,
// not only after the quarantined documents. batch(s) stays a pure function
// of (dataset, config, quarantine overlay, seed, step). A run resumed (or
// rewound) after a change of the overlay continues at its step on the new
// order: within the current pass some sequences are seen twice and some
// not at all, and the manifest's quarantine_hash changes (manifest_mismatch
// names it). Validation splits are not filtered, so val_loss stays
// comparable with the run before the quarantine.
type Quarantine struct {
	Format  int               `json:"format"`
	Entries []QuarantineEntry `json:"entries"`
}

// QuarantineEntry is one excluded document or shard.
type QuarantineEntry struct {
	// Doc is a document id: the upstream id the dataset records, or
	// "<source>#<index>" (the document's index in the source's train split
	// before any quarantine), as kestrel replay lists them.
	Doc string `json:"doc,omitempty"`
	// Shard is a shard file, relative to the dataset directory as in the
	// dataset manifest (or its base name); every document starting in it is
	// excluded.
	Shard string `json:"shard,omitempty"`
	// Source restricts Doc to one source (empty = any source).
	Source string `json:"source,omitempty"`
	Reason string `json:"reason"`
	Time   string `json:"time"` // RFC 3339, UTC
}

// QuarantinePath resolves data.quarantine for a dataset config (its paths
// resolved by config.Resolve): the path of the overlay the loader
// applies, or "" when there is none.
func QuarantinePath(cfg Config) (string, error) {
	switch cfg.Quarantine {
	case QuarantineNone:
		return "", nil
	case QuarantineAuto:
		if cfg.Path == "" {
			return "", nil
		}
		p := filepath.Join(cfg.Path, QuarantineFile)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		} else if err != nil {
			return "", fmt.Errorf("data.quarantine: %w", err)
		}
		return p, nil
	}
	p := cfg.Quarantine
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("data.quarantine: %w", err)
	}
	return p, nil
}

// ReadQuarantine reads an overlay file; a missing file is an empty overlay.
// Errors name the file and the entry.
func ReadQuarantine(path string) (*Quarantine, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Quarantine{Format: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("quarantine: %w", err)
	}
	q := &Quarantine{}
	if err := json.Unmarshal(b, q); err != nil {
		return nil, fmt.Errorf("quarantine %s: %w", path, err)
	}
	if q.Format != 1 {
		return nil, fmt.Errorf("quarantine %s: format %d, want 1", path, q.Format)
	}
	for i, e := range q.Entries {
		if (e.Doc == "") == (e.Shard == "") {
			return nil, fmt.Errorf("quarantine %s: entries[%d]: give exactly one of doc and shard", path, i)
		}
	}
	return q, nil
}

// Add appends entries for the documents ids and the shards, each with
// reason and the time now, skipping those already quarantined; it returns
// how many were added.
func (q *Quarantine) Add(docs, shards []string, source, reason string, now time.Time) int {
	have := map[string]bool{}
	for _, e := range q.Entries {
		have[e.Source+"\x00"+e.Doc+"\x00"+e.Shard] = true
	}
	ts := now.UTC().Format(time.RFC3339)
	n := 0
	add := func(e QuarantineEntry) {
		k := e.Source + "\x00" + e.Doc + "\x00" + e.Shard
		if have[k] {
			return
		}
		have[k] = true
		e.Reason, e.Time = reason, ts
		q.Entries = append(q.Entries, e)
		n++
	}
	for _, d := range docs {
		add(QuarantineEntry{Doc: d, Source: source})
	}
	for _, s := range shards {
		add(QuarantineEntry{Shard: s})
	}
	return n
}

// WriteQuarantine installs q at path atomically (internal/atomicfile).
func WriteQuarantine(path string, q *Quarantine) error {
	q.Format = 1
	b, err := json.MarshalIndent(q, "", "  ")
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	return nil
}

// ShardSpan is the token range one shard covers in its source's stream.
type ShardSpan struct {
	File       string
	Start, End int64
}

// apply returns ds with the quarantined documents removed from every
// source's train stream (sources with nothing quarantined keep their stream
// as it is). Entries that match nothing are logged.
func (q *Quarantine) apply(ds *Dataset, log *slog.Logger) (*Dataset, error) {
	if q == nil || len(q.Entries) == 0 {
		return ds, nil
	}
	used := make([]bool, len(q.Entries))
	out := &Dataset{Name: ds.Name, Hash: ds.Hash}
	for _, src := range ds.Sources {
		s := src
		if st := src.Train; st != nil {
			var drop map[int64]bool
			ider, _ := st.(DocIDer)
			for k, e := range q.Entries {
				if e.Shard != "" {
					for _, sh := range src.TrainShards {
						if sh.File != e.Shard && filepath.Base(sh.File) != e.Shard {
							continue
						}
						used[k] = true
						for d := docAt(st, sh.Start); d < st.NumDocs() && st.DocStart(d) < sh.End; d++ {
							if st.DocStart(d) >= sh.Start {
								drop = setDrop(drop, d)
							}
						}
					}
					continue
				}
				if e.Source != "" && e.Source != src.Name {
					continue
				}
				if i, ok := strings.CutPrefix(e.Doc, src.Name+"#"); ok {
					var d int64
					if _, err := fmt.Sscan(i, &d); err == nil && d >= 0 && d < st.NumDocs() && fmt.Sprint(d) == i {
						drop, used[k] = setDrop(drop, d), true
					}
				}
			}
			if ider != nil {
				want := map[string][]int{}
				for k, e := range q.Entries {
					if e.Doc != "" && (e.Source == "" || e.Source == src.Name) {
						want[e.Doc] = append(want[e.Doc], k)
					}
				}
				for d := int64(0); d < st.NumDocs() && len(want) > 0; d++ {
					if ks, ok := want[ider.DocID(d)]; ok {
						drop = setDrop(drop, d)
						for _, k := range ks {
							used[k] = true
						}
					}
				}
			}
			if len(drop) > 0 {
				s.Train = newFilteredStream(src.Name, st, drop)
			}
		}
		out.Sources = append(out.Sources, s)
	}
	for k, e := range q.Entries {
		if !used[k] && log != nil {
			log.Warn("data: quarantine entry matches no train document", "doc", e.Doc, "shard", e.Shard, "source", e.Source)
		}
	}
	return out, nil
}

func setDrop(m map[int64]bool, d int64) map[int64]bool {
	if m == nil {
		m = map[int64]bool{}
	}
	m[d] = true
	return m
}

// filteredStream is a TokenStream with some documents left out: the kept
// documents laid end to end in their order.
type filteredStream struct {
	name   string
	inner  TokenStream
	kept   []int64 // inner document index of each kept document
	starts []int64 // start of each kept document in this stream
	n      int64
}

func newFilteredStream(name string, inner TokenStream, drop map[int64]bool) *filteredStream {
	f := &filteredStream{name: name, inner: inner}
	for d := int64(0); d < inner.NumDocs(); d++ {
		if drop[d] {
			continue
		}
		f.kept = append(f.kept, d)
		f.starts = append(f.starts, f.n)
		f.n += docEnd(inner, d) - inner.DocStart(d)
	}
	return f
}

func (f *filteredStream) Len() int64             { return f.n }
func (f *filteredStream) NumDocs() int64         { return int64(len(f.kept)) }
func (f *filteredStream) DocStart(i int64) int64 { return f.starts[i] }

// DocID keeps the ids stable under quarantine: the upstream id, else
// "<source>#<index before the quarantine>".
func (f *filteredStream) DocID(i int64) string {
	d := f.kept[i]
	if ider, ok := f.inner.(DocIDer); ok {
		if id := ider.DocID(d); id != "" && !strings.HasPrefix(id, "#") {
			return id
		}
	}
	return fmt.Sprintf("%s#%d", f.name, d)
}

func (f *filteredStream) ReadAt(dst []int32, off int64) error {
	if off < 0 || off+int64(len(dst)) > f.n {
		return fmt.Errorf("quarantined stream: read [%d,%d) outside [0,%d)", off, off+int64(len(dst)), f.n)
	}
	i := sort.Search(len(f.starts), func(i int) bool { return f.starts[i] > off }) - 1
	for len(dst) > 0 {
		d := f.kept[i]
		in0 := f.inner.DocStart(d)
		docLen := docEnd(f.inner, d) - in0
		within := off - f.starts[i]
		k := min(int64(len(dst)), docLen-within)
		if err := f.inner.ReadAt(dst[:k], in0+within); err != nil {
			return err
		}
		dst, off = dst[k:], off+k
		i++
	}
	return nil
}

// quarantined applies the overlay data.quarantine names (if any) to ds.
func quarantined(ds *Dataset, cfg Config, log *slog.Logger) (*Dataset, error) {
	p, err := QuarantinePath(cfg)
	if err != nil || p == "" {
		return ds, err
	}
	q, err := ReadQuarantine(p)
	if err != nil {
		return nil, err
	}
	return q.apply(ds, log)
}
