package shards

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzDataset returns a valid manifest with one uint16 shard "s.bin" of
// two documents and its ids sidecar "s.ids", as the three files' bytes.
func fuzzDataset(t testing.TB) (manifest, shard, ids []byte) {
	shard = make([]byte, HeaderBytes)
	binary.LittleEndian.PutUint32(shard[0:], MagicUint16)
	binary.LittleEndian.PutUint32(shard[4:], VersionUint16)
	toks := []uint16{5, 6, 7, 0, 8, 0}
	binary.LittleEndian.PutUint32(shard[8:], uint32(len(toks)))
	for _, v := range toks {
		shard = binary.LittleEndian.AppendUint16(shard, v)
	}
	ids = []byte("\"a\"\n\"b\"\n")
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	m := Manifest{Format: Format, Tokenizer: TokenizerInfo{File: "tokenizer.json"}, TokenBytes: 2, ShardTokens: 16, Separator: "eos",
		Shards: []ShardInfo{{Source: "web", Split: Train, File: "s.bin", SHA256: sum(shard), Tokens: int64(len(toks)), Docs: 2,
			DocIndex: encodeDocIndex([]int64{0, 4}), IDsFile: "s.ids", IDsSHA256: sum(ids)}},
		Sources: []SourceTotals{{Source: "web", TrainTokens: int64(len(toks)), TrainDocs: 2}}, TotalTokens: int64(len(toks)), TotalDocs: 2}
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return manifest, shard, ids
}

// FuzzOpen: a dataset directory with any manifest.json (its dataset_hash
// recomputed when it parses, so the fuzzer gets past the hash), any shard
// s.bin and any ids sidecar s.ids opens and reads, or is refused with an
// error naming the dataset (and the shard) — never a panic. A manifest
// that parses keeps its hash through a write and a read (the hash check
// passes after the recomputation), and what reads is consistent: the
// documents tile the stream and there is one id per document.
func FuzzOpen(f *testing.F) {
	m, s, ids := fuzzDataset(f)
	f.Add(m, s, ids)
	f.Add(m, s[:len(s)-2], ids)
	f.Add([]byte(strings.Replace(string(m), `"docs":2`, `"docs":-1`, 1)), s, ids)
	f.Add([]byte(strings.Replace(string(m), `"docs":2`, `"docs":4000000000000000000`, 1)), s, ids)
	f.Add([]byte(strings.Replace(string(m), `"s.ids"`, `"../s.ids"`, 1)), s, ids)
	f.Add([]byte(`{"format":"kestrel-shards/1"}`), s, ids)
	f.Fuzz(func(t *testing.T, manifest, shard, ids []byte) {
		dir := t.TempDir()
		var m Manifest
		fixed := json.Unmarshal(manifest, &m) == nil
		if fixed {
			h, err := hashManifest(m)
			if err != nil {
				return // not representable (json.Marshal refuses it): Open refuses it too
			}
			m.DatasetHash = h
			if manifest, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range map[string][]byte{"manifest.json": manifest, "s.bin": shard, "s.ids": ids} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := Open(dir)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dataset "+dir+": ") {
				t.Fatalf("error %q does not name the dataset", err)
			}
			if fixed && strings.Contains(err.Error(), "does not match its content") {
				t.Fatalf("the manifest's hash did not survive a write and a read: %v", err)
			}
			return
		}
		defer ds.Close()
		checkStreams(t, ds)
	})
}

// checkStreams reads every stream of ds (small ones whole) and checks the
// documents tile it and the ids match them.
func checkStreams(t *testing.T, ds *Dataset) {
	for _, src := range ds.Sources() {
		for _, split := range []string{Train, Val} {
			st, err := ds.Stream(src, split)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "dataset ") {
					t.Fatalf("stream %s/%s: %q does not name the dataset", src, split, err)
				}
				continue
			}
			if st.Len() < 0 || st.Len() > 1<<16 {
				continue
			}
			buf := make([]int32, st.Len())
			if err := st.ReadAt(buf, 0); err != nil {
				if !strings.HasPrefix(err.Error(), "shard ") {
					t.Fatalf("read %s/%s: %q does not name the shard", src, split, err)
				}
				continue
			}
			total := int64(0)
			for i := range st.NumDocs() {
				d, err := st.Doc(i)
				if err != nil {
					t.Fatalf("document %d: %v", i, err)
				}
				total += int64(len(d))
			}
			if st.NumDocs() > 0 && total != st.Len()-st.DocStart(0) {
				t.Fatalf("%s/%s: documents hold %d tokens of %d from the first start", src, split, total, st.Len()-st.DocStart(0))
			}
			if got, err := st.DocIDs(); err == nil && int64(len(got)) != st.NumDocs() {
				t.Fatalf("%d ids for %d documents", len(got), st.NumDocs())
			}
		}
	}
}

// FuzzReadHeader: any shard file's header reads or is refused naming the
// file; one that reads is a llm.c header whose token count matches the
// file size, and the header written back the writer's way reads the same.
func FuzzReadHeader(f *testing.F) {
	_, s, _ := fuzzDataset(f)
	f.Add(s)
	f.Add(s[:HeaderBytes-1])
	legacy := append([]byte(nil), s[:HeaderBytes]...)
	binary.LittleEndian.PutUint32(legacy[0:], MagicUint32)
	binary.LittleEndian.PutUint32(legacy[4:], LegacyVersionUint32)
	binary.LittleEndian.PutUint32(legacy[8:], 1)
	f.Add(append(legacy, 1, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "x.bin")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if w := h.TokenBytes(); w != 2 && w != 4 || int64(len(b)) != HeaderBytes+h.Tokens*int64(w) {
			t.Fatalf("header %+v accepted for a %d-byte file", h, len(b))
		}
		out := make([]byte, len(b))
		copy(out[HeaderBytes:], b[HeaderBytes:])
		binary.LittleEndian.PutUint32(out[0:], uint32(h.Magic))
		binary.LittleEndian.PutUint32(out[4:], uint32(h.Version))
		binary.LittleEndian.PutUint32(out[8:], uint32(h.Tokens))
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		if again, err := ReadHeader(p); err != nil || again != h {
			t.Fatalf("written back: %+v, %v; want %+v", again, err, h)
		}
	})
}

// TestOpenRefusesImpossibleManifest: counts the doc index cannot hold and
// paths that leave the dataset are refused by Open, naming the shard and
// the field (before: a negative or huge docs count panicked in make, and
// ids_file / tokenizer.file were read wherever they pointed).
func TestOpenRefusesImpossibleManifest(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"negative docs", func(m *Manifest) { m.Shards[0].Docs = -1 }, "shard s.bin: docs -1: the doc_index (2 bytes) cannot hold them"},
		{"huge docs", func(m *Manifest) { m.Shards[0].Docs = 1 << 62 }, "shard s.bin: docs 4611686018427387904"},
		{"negative tokens", func(m *Manifest) { m.Shards[0].Tokens = -1 }, "shard s.bin: tokens -1"},
		{"ids outside", func(m *Manifest) { m.Shards[0].IDsFile = "../s.ids" }, `shard s.bin: ids_file "../s.ids" leaves the dataset`},
		{"tokenizer outside", func(m *Manifest) { m.Tokenizer.File = "/etc/passwd" }, `tokenizer.file "/etc/passwd" leaves the dataset`},
	} {
		raw, s, ids := fuzzDataset(t)
		var m Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		c.edit(&m)
		h, err := hashManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		m.DatasetHash = h
		raw, _ = json.Marshal(m)
		dir := t.TempDir()
		for name, b := range map[string][]byte{"manifest.json": raw, "s.bin": s, "s.ids": ids} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
