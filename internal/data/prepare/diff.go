package prepare

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// Diff compares two prepared datasets and lists every difference that
// matters (empty = identical). Two datasets are identical when they have
//
//   - the same kept documents per source, in the same order, with the same
//     id, text and meta (shard files may be cut differently);
//   - the same rejected documents, each with the same stage, rule and detail;
//   - the same counts in report.json: per source and stage, rejects per
//     rule, problems per kind, kept documents and bytes, near-duplicate
//     clusters and hotspots, contamination overlap;
//   - a byte-identical tokenizer.json (when either has one);
//   - the same token sequence and document ids per source and split.
//
// Timings, creation time, the output path, worker counts, the file names
// of shards and the distributed section are not compared.
func Diff(a, b string) ([]string, error) {
	var out []string
	add := func(f string, args ...any) {
		if len(out) < 50 {
			out = append(out, fmt.Sprintf(f, args...))
		}
	}
	ra, err := datareport.Load(a)
	if err != nil {
		return nil, err
	}
	rb, err := datareport.Load(b)
	if err != nil {
		return nil, err
	}
	cmpReport(ra, rb, add)

	ka, err := keptDocs(a, ra)
	if err != nil {
		return nil, err
	}
	kb, err := keptDocs(b, rb)
	if err != nil {
		return nil, err
	}
	for _, src := range unionKeys(ka, kb) {
		x, y := ka[src], kb[src]
		if len(x) != len(y) {
			add("source %s: %d kept documents vs %d", src, len(x), len(y))
		}
		for i := range min(len(x), len(y)) {
			if !bytes.Equal(x[i], y[i]) {
				add("source %s: kept document %d differs:\n  %.200s\n  %.200s", src, i, x[i], y[i])
				break
			}
		}
	}
	ja, err := rejectSet(a, ra)
	if err != nil {
		return nil, err
	}
	jb, err := rejectSet(b, rb)
	if err != nil {
		return nil, err
	}
	for _, id := range unionKeys(ja, jb) {
		if ja[id] != jb[id] {
			add("reject %s: %+v vs %+v", id, ja[id], jb[id])
		}
	}

	ta, ea := os.ReadFile(filepath.Join(a, "tokenizer.json"))
	tb, eb := os.ReadFile(filepath.Join(b, "tokenizer.json"))
	switch {
	case ea != nil && eb != nil:
		return out, nil // no tokenizer stage
	case ea != nil || eb != nil:
		add("tokenizer.json: present in one dataset only (%v / %v)", ea, eb)
		return out, nil
	case !bytes.Equal(ta, tb):
		add("tokenizer.json differs (%d vs %d bytes)", len(ta), len(tb))
	}
	if err := cmpTokens(a, b, add); err != nil {
		return nil, err
	}
	return out, nil
}

func cmpReport(a, b *datareport.Report, add func(string, ...any)) {
	eq := func(what string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			xb, _ := json.Marshal(x)
			yb, _ := json.Marshal(y)
			add("report %s: %s vs %s", what, xb, yb)
		}
	}
	eq("rejects", a.Rejects, b.Rejects)
	eq("kept", a.Kept, b.Kept)
	eq("totals", a.Totals, b.Totals)
	eq("problems", a.Problems, b.Problems)
	eq("near_clusters", a.NearClusters, b.NearClusters)
	eq("hotspots", a.Hotspots, b.Hotspots)
	eq("overlap", a.Overlap, b.Overlap)
	eq("decontam_cut_docs", a.DecontamCutDocs, b.DecontamCutDocs)
	eq("bytes_per_doc", a.BytesPerDoc, b.BytesPerDoc)
	if len(a.Sources) != len(b.Sources) {
		add("report sources: %d vs %d", len(a.Sources), len(b.Sources))
		return
	}
	for i := range a.Sources {
		eq("sources["+a.Sources[i].Name+"]", a.Sources[i], b.Sources[i])
	}
	if (a.Tokens == nil) != (b.Tokens == nil) {
		add("report tokens: present in one only")
	} else if a.Tokens != nil {
		eq("tokens.total_tokens", a.Tokens.TotalTokens, b.Tokens.TotalTokens)
		eq("tokens.tokens", a.Tokens.Tokens, b.Tokens.Tokens)
	}
}

// keptDocs returns each source's kept documents as JSON lines, in the
// order of the report's shard list.
func keptDocs(dir string, r *datareport.Report) (map[string][][]byte, error) {
	out := map[string][][]byte{}
	for _, f := range r.DocShards {
		err := zstdLines(filepath.Join(dir, f.Path), func(line []byte) error {
			out[f.Source] = append(out[f.Source], slices.Clone(line))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rejectSet returns every rejected document by id.
func rejectSet(dir string, r *datareport.Report) (map[string]RejectRecord, error) {
	out := map[string]RejectRecord{}
	for _, f := range r.RejectFiles {
		path := filepath.Join(dir, f.Path)
		err := zstdLines(path, func(line []byte) error {
			var rj RejectRecord
			if err := json.Unmarshal(line, &rj); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if _, dup := out[rj.ID]; dup {
				return fmt.Errorf("%s: %s rejected twice", path, rj.ID)
			}
			out[rj.ID] = rj
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func zstdLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// cmpTokens compares the token sequence and document ids of every source
// and split.
func cmpTokens(a, b string, add func(string, ...any)) error {
	da, err := shards.Open(a)
	if err != nil {
		return err
	}
	defer da.Close()
	db, err := shards.Open(b)
	if err != nil {
		return err
	}
	defer db.Close()
	if !slices.Equal(da.Sources(), db.Sources()) {
		add("token sources: %v vs %v", da.Sources(), db.Sources())
		return nil
	}
	for _, src := range da.Sources() {
		for _, split := range []string{shards.Train, shards.Val} {
			sa, err := da.Stream(src, split)
			if err != nil {
				return err
			}
			sb, err := db.Stream(src, split)
			if err != nil {
				return err
			}
			if sa.Len() != sb.Len() {
				add("tokens %s/%s: %d vs %d", src, split, sa.Len(), sb.Len())
				continue
			}
			ta, tb := make([]int32, sa.Len()), make([]int32, sb.Len())
			if err := sa.ReadAt(ta, 0); err != nil {
				return err
			}
			if err := sb.ReadAt(tb, 0); err != nil {
				return err
			}
			if !slices.Equal(ta, tb) {
				add("tokens %s/%s differ", src, split)
			}
			ia, err := sa.DocIDs()
			if err != nil {
				return err
			}
			ib, err := sb.DocIDs()
			if err != nil {
				return err
			}
			if !slices.Equal(ia, ib) || !slices.Equal(sa.DocStarts(), sb.DocStarts()) {
				add("documents of %s/%s differ (%d vs %d)", src, split, len(ia), len(ib))
			}
		}
	}
	return nil
}

func unionKeys[V any](a, b map[string]V) []string {
	var k []string
	for x := range a {
		k = append(k, x)
	}
	for x := range b {
		if _, ok := a[x]; !ok {
			k = append(k, x)
		}
	}
	slices.Sort(k)
	return k
}
