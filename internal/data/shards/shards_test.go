package shards

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

func gpt2(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	p, err := datadir.Path("gpt2-bpe")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func testDocs(n int) []document.Doc {
	var docs []document.Doc
	for i := 0; i < n; i++ {
		src := []string{"web", "code"}[i%2]
		docs = append(docs, document.Doc{ID: fmt.Sprintf("%s-%d", src, i), Source: src, Text: fmt.Sprintf("Document %d says hello\nwith %s text, 😀 and \xff bytes.", i, strings.Repeat("more ", i%17))})
	}
	return docs
}

func seq(docs []document.Doc, failAt int) func(func(document.Doc, error) bool) {
	return func(yield func(document.Doc, error) bool) {
		for i, d := range docs {
			if i == failAt {
				yield(document.Doc{}, errors.New("boom"))
				return
			}
			if !yield(d, nil) {
				return
			}
		}
	}
}

func TestBuildOpenRoundTrip(t *testing.T) {
	tok := gpt2(t)
	dir := t.TempDir()
	docs := testDocs(300)
	cfg := Config{ShardTokens: 1000, ValFraction: 0.2, Seed: 7, Separator: "eos", Workers: 3}
	m, err := Build(context.Background(), seq(docs, -1), tok, "gpt2-bpe", cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) < 4 {
		t.Fatalf("want several shards, got %d", len(m.Shards))
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if err := ds.Verify(); err != nil {
		t.Fatal(err)
	}
	if slices.Compare(ds.Sources(), []string{"code", "web"}) != 0 {
		t.Fatalf("sources %v", ds.Sources())
	}
	var total int64
	for _, src := range ds.Sources() {
		for _, split := range []string{Train, Val} {
			var want []int32
			var wantStarts []int64
			var wantIDs []string
			for _, d := range docs {
				if d.Source != src || cfg.IsVal(d.ID) != (split == Val) {
					continue
				}
				wantStarts = append(wantStarts, int64(len(want)))
				wantIDs = append(wantIDs, d.ID)
				for _, id := range tok.Encode(d.Text) {
					want = append(want, int32(id))
				}
				want = append(want, int32(tok.EOT()))
			}
			st, err := ds.Stream(src, split)
			if err != nil {
				t.Fatal(err)
			}
			if st.Len() != int64(len(want)) || !slices.Equal(st.DocStarts(), wantStarts) {
				t.Fatalf("%s/%s: len %d docs %d, want %d %d", src, split, st.Len(), st.NumDocs(), len(want), len(wantStarts))
			}
			got := make([]int32, st.Len())
			if err := st.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s/%s: tokens differ", src, split)
			}
			// unaligned reads across shard boundaries
			for off := int64(0); off+37 <= st.Len(); off += 501 {
				part := make([]int32, 37)
				if err := st.ReadAt(part, off); err != nil || !slices.Equal(part, want[off:off+37]) {
					t.Fatalf("ReadAt(%d): %v", off, err)
				}
			}
			ids, err := st.DocIDs()
			if err != nil || !slices.Equal(ids, wantIDs) {
				t.Fatalf("%s/%s: doc ids %v: %v", src, split, err, len(ids))
			}
			if split == Val && st.NumDocs() == 0 {
				t.Fatalf("%s: empty val split", src)
			}
			total += st.Len()
		}
	}
	if total != m.TotalTokens {
		t.Fatalf("total %d, manifest %d", total, m.TotalTokens)
	}
	// header of a shard, as llm.c reads it
	raw, err := os.ReadFile(filepath.Join(dir, m.Shards[0].File))
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(raw) != MagicUint16 || binary.LittleEndian.Uint32(raw[4:]) != 1 || int64(binary.LittleEndian.Uint32(raw[8:])) != m.Shards[0].Tokens || int64(len(raw)) != HeaderBytes+2*m.Shards[0].Tokens {
		t.Fatalf("bad header %v, size %d", raw[:12], len(raw))
	}
	dt, err := ds.Tokenizer()
	if err != nil || dt.Hash() != tok.Hash() {
		t.Fatalf("dataset tokenizer: %v", err)
	}
	// deterministic: the same input gives the same dataset hash
	dir2 := t.TempDir()
	cfg.Workers = 1
	m2, err := Build(context.Background(), seq(docs, -1), tok, "gpt2-bpe", cfg, dir2)
	if err != nil || m2.DatasetHash != m.DatasetHash {
		t.Fatalf("rebuild: %v, hash %s vs %s", err, m2.DatasetHash, m.DatasetHash)
	}
}

func TestBOSSeparator(t *testing.T) {
	tok := gpt2(t)
	dir := t.TempDir()
	docs := testDocs(10)
	_, err := Build(context.Background(), seq(docs, -1), tok, "", Config{ShardTokens: 64, Separator: "bos"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := ds.Stream("web", Train)
	for i := int64(0); i < st.NumDocs(); i++ {
		d, err := st.Doc(i)
		if err != nil || d[0] != int32(tok.EOT()) {
			t.Fatalf("doc %d does not start with BOS: %v %v", i, d[:1], err)
		}
	}
}

func TestCorruptShardRejected(t *testing.T) {
	tok := gpt2(t)
	for _, damage := range []string{"flip", "truncate", "header"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			m, err := Build(context.Background(), seq(testDocs(100), -1), tok, "", Config{ShardTokens: 500, Separator: "eos"}, dir)
			if err != nil {
				t.Fatal(err)
			}
			victim := m.Shards[1]
			p := filepath.Join(dir, victim.File)
			raw, _ := os.ReadFile(p)
			switch damage {
			case "flip":
				raw[len(raw)-3] ^= 0x40
			case "truncate":
				raw = raw[:len(raw)-2]
			case "header":
				raw[8]++
			}
			os.Chmod(p, 0o644)
			if err := os.WriteFile(p, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			ds, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := ds.Stream(victim.Source, victim.Split)
			buf := make([]int32, st.Len())
			err = st.ReadAt(buf, 0)
			if err == nil || !strings.Contains(err.Error(), victim.File) {
				t.Fatalf("corrupted shard read: err %v does not name %s", err, victim.File)
			}
			if err2 := st.ReadAt(buf, 0); err2 == nil {
				t.Fatal("second read of a corrupted shard succeeded")
			}
		})
	}
}

func TestManifestTamperRejected(t *testing.T) {
	dir := t.TempDir()
	if _, err := Build(context.Background(), seq(testDocs(20), -1), gpt2(t), "", DefaultConfig(), dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "manifest.json")
	raw, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(raw), `"train_docs": 1`, `"train_docs": 2`, 1)), 0o644)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "dataset_hash") {
		t.Fatalf("tampered manifest: %v", err)
	}
}

// TestFailedRebuildKeepsDataset: a Build that fails part-way leaves the
// existing dataset readable and unchanged.
func TestFailedRebuildKeepsDataset(t *testing.T) {
	tok := gpt2(t)
	dir := t.TempDir()
	m, err := Build(context.Background(), seq(testDocs(60), -1), tok, "", Config{ShardTokens: 300, Separator: "eos"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), seq(testDocs(80), 50), tok, "", Config{ShardTokens: 300, Separator: "eos"}, dir); err == nil {
		t.Fatal("failing iterator did not fail Build")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, seq(testDocs(5000), -1), tok, "", Config{ShardTokens: 300, Separator: "eos"}, dir); err == nil {
		t.Fatal("cancelled Build succeeded")
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Hash() != m.DatasetHash {
		t.Fatal("manifest changed")
	}
	if err := ds.Verify(); err != nil {
		t.Fatal(err)
	}
	// a successful rebuild replaces it and removes the old build
	m2, err := Build(context.Background(), seq(testDocs(80), -1), tok, "", Config{ShardTokens: 300, Separator: "eos"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	ds2, err := Open(dir)
	if err != nil || ds2.Hash() != m2.DatasetHash || ds2.Verify() != nil {
		t.Fatalf("rebuild: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "shards"))
	if len(entries) != 1 {
		t.Fatalf("shards/ holds %d entries, want the one build", len(entries))
	}
}

func TestUint32Shard(t *testing.T) {
	dir := t.TempDir()
	w := &shardWriter{source: "s", split: Train, dir: dir, width: 4, magic: MagicUint32, maxTokens: 10}
	ids := []int32{70000, 1, 99999, 5}
	if err := w.write("d0", ids); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	info := w.done[0]
	info.File = info.File[1:]
	sf := &shardFile{info: info, path: filepath.Join(dir, info.File), width: 4, magic: MagicUint32}
	st := &Stream{shards: []*shardFile{sf}, base: []int64{0, 4}}
	got := make([]int32, 4)
	if err := st.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int32{70000, 1, 99999, 5}) {
		t.Fatalf("got %v", got)
	}
	// the header is llm.c's "llama-3" layout: magic, version 7, count, zeros
	raw, err := os.ReadFile(sf.path)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint32{20240801, 7, 4} {
		if v := binary.LittleEndian.Uint32(raw[4*i:]); v != want {
			t.Fatalf("header int %d = %d, want %d", i, v, want)
		}
	}
	if !bytes.Equal(raw[12:HeaderBytes], make([]byte, HeaderBytes-12)) || len(raw) != HeaderBytes+16 {
		t.Fatalf("header tail not zero or size %d", len(raw))
	}
}

// TestShardHeaders: ReadHeader accepts llm.c's two layouts and kestrel's
// legacy uint32 version 1 (flagged Legacy), and rejects other versions,
// magics and sizes with a message naming the file and the field.
func TestShardHeaders(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name           string
		magic, version uint32
		count, tokens  int
		width          int
		legacy         bool
		errWant        string
	}{
		{"u16", 20240520, 1, 3, 3, 2, false, ""},
		{"u32", 20240801, 7, 3, 3, 4, false, ""},
		{"u32legacy", 20240801, 1, 3, 3, 4, true, ""},
		{"u32v2", 20240801, 2, 3, 3, 4, false, "version 2, want 7"},
		{"u16v7", 20240520, 7, 3, 3, 2, false, "version 7, want 1"},
		{"badmagic", 12345, 1, 3, 3, 2, false, "magic 12345"},
		{"short", 20240801, 7, 4, 3, 4, false, "4 tokens imply"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := make([]byte, HeaderBytes+c.tokens*c.width)
			binary.LittleEndian.PutUint32(b[0:], c.magic)
			binary.LittleEndian.PutUint32(b[4:], c.version)
			binary.LittleEndian.PutUint32(b[8:], uint32(c.count))
			p := filepath.Join(dir, c.name+".bin")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			h, err := ReadHeader(p)
			if c.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), c.errWant) || !strings.Contains(err.Error(), c.name+".bin") {
					t.Fatalf("err %v, want %q and the file name", err, c.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Legacy() != c.legacy || h.TokenBytes() != c.width || h.Tokens != int64(c.count) {
				t.Fatalf("%+v legacy %v width %d", h, h.Legacy(), h.TokenBytes())
			}
		})
	}
}

// TestLegacyUint32ShardReads: a shard whose header says version 1 with the
// uint32 magic (kestrel's old layout; its sha256 in the manifest covers
// that header) still reads, and LegacyShards names it.
func TestLegacyUint32ShardReads(t *testing.T) {
	dir := t.TempDir()
	w := &shardWriter{source: "s", split: Train, dir: dir, width: 4, magic: MagicUint32, maxTokens: 10}
	if err := w.write("d0", []int32{70000, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	info := w.done[0]
	info.File = info.File[1:]
	p := filepath.Join(dir, info.File)
	raw, _ := os.ReadFile(p)
	binary.LittleEndian.PutUint32(raw[4:], LegacyVersionUint32)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, _ := fileSHA256(p)
	info.SHA256 = sum
	sf := &shardFile{info: info, path: p, width: 4, magic: MagicUint32}
	ds := &Dataset{dir: dir, shards: []*shardFile{sf}}
	legacy, err := ds.LegacyShards()
	if err != nil || !slices.Equal(legacy, []string{info.File}) {
		t.Fatalf("legacy %v err %v", legacy, err)
	}
	st := &Stream{shards: []*shardFile{sf}, base: []int64{0, 2}}
	got := make([]int32, 2)
	if err := st.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int32{70000, 2}) {
		t.Fatalf("got %v", got)
	}
	// version 2 is neither llm.c's nor kestrel's legacy: a clear error
	binary.LittleEndian.PutUint32(raw[4:], 2)
	os.WriteFile(p, raw, 0o644)
	sum, _ = fileSHA256(p)
	info.SHA256 = sum
	sf2 := &shardFile{info: info, path: p, width: 4, magic: MagicUint32}
	st2 := &Stream{shards: []*shardFile{sf2}, base: []int64{0, 2}}
	if err := st2.ReadAt(got, 0); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("version 2 read: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{ShardTokens: 0, Separator: "eos"}, {ShardTokens: 10, ValFraction: 1, Separator: "eos"}, {ShardTokens: 10, Separator: "nul"}} {
		if c.Validate() == nil {
			t.Fatalf("%+v accepted", c)
		}
	}
	if _, err := Build(context.Background(), seq([]document.Doc{{ID: "x", Source: "a/b", Text: "t"}}, -1), gpt2(t), "", DefaultConfig(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "a/b") {
		t.Fatalf("bad source tag: %v", err)
	}
}
