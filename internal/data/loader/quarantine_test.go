package loader

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeOverlay writes a quarantine overlay with the given doc ids and shards.
func writeOverlay(t *testing.T, docs, shards []string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), QuarantineFile)
	q := &Quarantine{}
	q.Add(docs, shards, "", "test", time.Unix(0, 0))
	if err := WriteQuarantine(p, q); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestQuarantineNeverEmitted: with an overlay, no token of a quarantined
// document (by upstream id, by SOURCE#INDEX, or through its shard) is in
// any batch over two passes of the data, BatchInfo never names one, the
// batches are a pure function of (config, overlay, step), and without the
// overlay the same documents are read.
func TestQuarantineNeverEmitted(t *testing.T) {
	for _, packing := range []string{PackConcat, PackBOS} {
		t.Run(packing, func(t *testing.T) {
			ds := synthDataset(3000, 2000)
			src1 := ds.Sources[1].Train.(*MemStream)
			// source 1's "shard" b.bin holds documents 20..29
			ds.Sources[1].TrainShards = []ShardSpan{{File: "a.bin", Start: 0, End: src1.Starts[20]}, {File: "dir/b.bin", Start: src1.Starts[20], End: src1.Starts[30]}, {File: "c.bin", Start: src1.Starts[30], End: src1.Len()}}
			overlay := writeOverlay(t, []string{"s0-d3", "s0-d10", "src1#5", "no-such-doc"}, []string{"b.bin"})
			// the tokens of the quarantined documents
			bad := map[int32]string{}
			mark := func(src int, m *MemStream, d int, id string) {
				end := m.Len()
				if d+1 < len(m.Starts) {
					end = m.Starts[d+1]
				}
				for off := m.Starts[d]; off < end; off++ {
					bad[int32(src*tokBase)+int32(off)] = id
				}
			}
			src0 := ds.Sources[0].Train.(*MemStream)
			mark(0, src0, 3, "s0-d3")
			mark(0, src0, 10, "s0-d10")
			mark(1, src1, 5, "s1-d5")
			badIDs := map[string]bool{"s0-d3": true, "s0-d10": true, "s1-d5": true}
			for d := 20; d < 30; d++ {
				mark(1, src1, d, src1.IDs[d])
				badIDs[src1.IDs[d]] = true
			}
			cfg := testConfig()
			cfg.Packing = packing
			cfg.Prefetch = 0
			seen := func(q string, steps int) (map[string]bool, []batchOut) {
				c := cfg
				c.Quarantine = q
				l := mustNew(t, ds, c, Options{})
				hits := map[string]bool{}
				var outs []batchOut
				for s := 0; s < steps; s++ {
					b := fillStep(t, l, s, 3)
					outs = append(outs, b)
					for i, x := range b.in {
						if id, ok := bad[x]; ok && b.tg[i] != PadTarget {
							hits[id] = true
						}
					}
					for _, x := range b.tg {
						if id, ok := bad[x]; ok {
							hits[id] = true
						}
					}
					info, err := l.BatchInfo(s)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range info.Rows {
						for _, d := range r.Docs {
							if badIDs[d.ID] {
								hits["info:"+d.ID] = true
							}
						}
					}
				}
				return hits, outs
			}
			steps := 100 // over two passes of both sources
			if packing == PackBOS {
				steps = 40
			}
			hits, outs := seen(overlay, steps)
			if len(hits) > 0 {
				t.Fatalf("quarantined documents emitted: %v", hits)
			}
			_, again := seen(overlay, steps)
			for s := range outs {
				if !equalBatch(outs[s], again[s]) {
					t.Fatalf("step %d differs between two loaders with the same overlay", s)
				}
			}
			for _, q := range []string{QuarantineNone, ""} { // "" = auto: cfg.Path is empty, so no overlay
				hits, _ = seen(q, steps)
				if !hits["s0-d3"] || !hits["s1-d5"] || !hits["s1-d25"] {
					t.Fatalf("quarantine %q: the documents are not read without the overlay (%v): the test cannot fail", q, hits)
				}
			}
		})
	}
}

// TestFilteredStream: the stream with documents left out is the kept
// documents end to end, read across document boundaries, with stable ids.
func TestFilteredStream(t *testing.T) {
	inner := NewMemStream([][]int32{{1, 2, 3}, {4, 5}, {6}, {7, 8, 9, 10}})
	f := newFilteredStream("x", inner, map[int64]bool{1: true})
	if f.Len() != 8 || f.NumDocs() != 3 || f.DocStart(2) != 4 {
		t.Fatalf("len %d docs %d start(2) %d", f.Len(), f.NumDocs(), f.DocStart(2))
	}
	got := make([]int32, 6)
	if err := f.ReadAt(got, 1); err != nil || !slices.Equal(got, []int32{2, 3, 6, 7, 8, 9}) {
		t.Fatalf("ReadAt: %v %v", got, err)
	}
	if f.ReadAt(got, 3) == nil {
		t.Error("read past the end accepted")
	}
	if f.DocID(1) != "x#2" {
		t.Errorf("DocID(1) = %q, want x#2 (the index before the quarantine)", f.DocID(1))
	}
}

// TestQuarantineFile: Add skips duplicates and records reason and time;
// bad files and bad paths are errors naming them; data.quarantine resolves.
func TestQuarantineFile(t *testing.T) {
	dir := t.TempDir()
	q := &Quarantine{}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if n := q.Add([]string{"a", "b", "a"}, []string{"s.bin"}, "", "spike", now); n != 3 {
		t.Fatalf("added %d, want 3", n)
	}
	if n := q.Add([]string{"b", "c"}, nil, "", "again", now); n != 1 {
		t.Fatalf("added %d, want 1", n)
	}
	if e := q.Entries[0]; e.Reason != "spike" || e.Time != "2026-01-02T03:04:05Z" {
		t.Errorf("entry %+v", e)
	}
	p := filepath.Join(dir, QuarantineFile)
	if err := WriteQuarantine(p, q); err != nil {
		t.Fatal(err)
	}
	back, err := ReadQuarantine(p)
	if err != nil || len(back.Entries) != 4 {
		t.Fatalf("read back %+v %v", back, err)
	}
	for name, body := range map[string]string{"bad.json": `{"format":1,"entries":[{"doc":"a","shard":"b"}]}`, "fmt.json": `{"format":2}`, "syntax.json": `{`} {
		bp := filepath.Join(dir, name)
		os.WriteFile(bp, []byte(body), 0o644)
		if _, err := ReadQuarantine(bp); err == nil || !strings.Contains(err.Error(), bp) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// data.quarantine: auto finds the dataset's file, none ignores it, a
	// missing explicit path is an error.
	for _, c := range []struct {
		q, want string
		err     bool
	}{{"", p, false}, {"none", "", false}, {p, p, false}, {filepath.Join(dir, "missing.json"), "", true}} {
		got, err := QuarantinePath(Config{Path: dir, Quarantine: c.q})
		if got != c.want || (err != nil) != c.err {
			t.Errorf("quarantine %q: %q, %v", c.q, got, err)
		}
	}
	if got, err := QuarantinePath(Config{Path: t.TempDir()}); got != "" || err != nil {
		t.Errorf("auto without a file: %q %v", got, err)
	}
}
