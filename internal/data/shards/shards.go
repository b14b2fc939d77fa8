// Package shards writes and reads tokenized datasets: llm.c-compatible
// token shards plus a manifest.json with hashes and document boundaries.
//
// # Layout
//
//	DATASET/manifest.json                    the manifest (see Manifest)
//	DATASET/tokenizer.json                   a copy of the tokenizer
//	DATASET/shards/<build>/tokenizer.json    the tokenizer the shards were made with
//	DATASET/shards/<build>/<source>_<split>_NNNNNN.bin
//	DATASET/shards/<build>/<source>_<split>_NNNNNN.ids   document ids, one JSON string per line
//
// A shard is a 256×int32 little-endian header — magic 20240520 and version
// 1 (tokens are uint16, vocabulary ≤ 65536) or magic 20240801 and version 7
// (uint32), then the token count, the rest zero — followed by the tokens,
// as llm.c's dev/data/data_common.py writes them and its loaders read them.
// kestrel before 2026-11 wrote uint32 shards with version 1, which llm.c
// rejects; Open still reads them (the layout is otherwise the same, and
// their sha256 in the manifest stays valid) and Dataset.LegacyShards names
// them; `kestrel data prepare` into a fresh directory rewrites them as
// version 7. Each source has its own
// train and val shards; a document goes to val when a hash of its id
// (seeded) falls below ValFraction, so train and val never share one.
// Documents are separated by the end-of-text token after each document
// (Separator "eos") or a beginning token before it ("bos").
//
// Build writes a new build directory, then replaces manifest.json by rename,
// then removes the builds the manifest no longer names: a crash leaves the
// previous dataset intact.
//
// # Reading
//
// Open reads manifest.json and checks its dataset hash. Shards are verified
// lazily: the first read of a shard checks its size, header and sha256 and
// a mismatch is an error naming the shard (and stays one). Reads use pread
// on the open shard files; nothing is loaded twice.
//
//	ds, _ := shards.Open(dir)
//	st, _ := ds.Stream("web", "train")      // one source's split, shards concatenated
//	st.Len()                                 // tokens
//	st.ReadAt(dst []int32, off)              // tokens [off, off+len(dst))
//	st.NumDocs(); st.DocStart(i)             // document i starts at token DocStart(i)
//	st.DocStarts(); st.DocsIn(off, n)        // all starts / those in [off, off+n)
//	st.DocID(i); st.DocIDs()                 // upstream document ids (sidecar <shard>.ids)
//
// Stream satisfies internal/data/loader's TokenStream interface.
package shards

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// llm.c shard header constants.
const (
	MagicUint16   = 20240520
	MagicUint32   = 20240801
	VersionUint16 = 1 // llm.c "gpt-2" shards
	VersionUint32 = 7 // llm.c "llama-3" shards
	// LegacyVersionUint32 is the version kestrel wrote into uint32 shards
	// before following llm.c; still read, never written.
	LegacyVersionUint32 = 1
	HeaderInts          = 256
	HeaderBytes         = HeaderInts * 4
)

// Format names the manifest format.
const Format = "kestrel-shards/1"

// Splits are the two splits of every source.
const (
	Train = "train"
	Val   = "val"
)

// Config is the [shards] part of data preparation.
type Config struct {
	ShardTokens int     `toml:"shard_tokens" comment:"tokens per shard file (the last shard of a source/split is shorter)"`
	ValFraction float64 `toml:"val_fraction" comment:"fraction of each source's documents held out for validation, chosen by a hash of the document id"`
	Seed        uint64  `toml:"seed" comment:"seed of the document-id hash that picks the validation split"`
	Separator   string  `toml:"separator" comment:"document separator: eos (end-of-text after each document, GPT-2 style) or bos (beginning token before each)"`
	Workers     int     `toml:"workers" comment:"tokenizer goroutines (0 = all cores)"`
	// Provenance, set by kestrel prepare, is copied into the manifest.
	Provenance *Provenance `toml:"-"`
}

// Provenance says what a dataset was made from and checked against, so
// that an evaluation can tell whether its items could have leaked into
// training (kestrel eval warns when they could).
type Provenance struct {
	// Inputs are each source's resolved input files and directories.
	Inputs map[string][]string `json:"inputs"`
	// Decontam is nil when the documents were not decontaminated.
	Decontam *DecontamInfo `json:"decontam,omitempty"`
}

// DecontamInfo is the n-gram decontamination a dataset went through.
type DecontamInfo struct {
	NGram    int           `json:"ngram"`
	Mode     string        `json:"mode"`
	EvalSets []EvalSetInfo `json:"eval_sets"`
}

// EvalSetInfo is one evaluation set decontamination protected: its name
// and the sha256 of each of its files.
type EvalSetInfo struct {
	Name  string     `json:"name"`
	Files []FileHash `json:"files"`
}

// FileHash is a file and the sha256 of its bytes.
type FileHash struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// DefaultConfig returns the shard defaults.
func DefaultConfig() Config {
	return Config{ShardTokens: 1 << 24, ValFraction: 0.01, Seed: 0x6b657374, Separator: "eos"}
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.ShardTokens <= 0 || c.ShardTokens > math.MaxInt32 {
		return fmt.Errorf("shards.shard_tokens: %d must be in [1, 2^31) (the llm.c header holds an int32 count)", c.ShardTokens)
	}
	if c.ValFraction < 0 || c.ValFraction >= 1 || math.IsNaN(c.ValFraction) {
		return fmt.Errorf("shards.val_fraction: %v must be in [0, 1)", c.ValFraction)
	}
	if c.Separator != "eos" && c.Separator != "bos" {
		return fmt.Errorf("shards.separator: %q must be eos or bos", c.Separator)
	}
	return nil
}

// IsVal reports whether the document with this id belongs to the
// validation split.
func (c Config) IsVal(id string) bool {
	if c.ValFraction <= 0 {
		return false
	}
	h := xxh3.HashStringSeed(id, c.Seed)
	return float64(h>>11)/(1<<53) < c.ValFraction
}

// Manifest describes a dataset. Its DatasetHash is the sha256 of the
// manifest JSON written with DatasetHash empty.
type Manifest struct {
	Format      string         `json:"format"`
	Build       string         `json:"build"`
	Tokenizer   TokenizerInfo  `json:"tokenizer"`
	TokenBytes  int            `json:"token_bytes"`
	ShardTokens int            `json:"shard_tokens"`
	ValFraction float64        `json:"val_fraction"`
	Seed        uint64         `json:"seed"`
	Separator   string         `json:"separator"`
	SeparatorID int32          `json:"separator_id"`
	Shards      []ShardInfo    `json:"shards"`
	Sources     []SourceTotals `json:"sources"`
	TotalTokens int64          `json:"total_tokens"`
	TotalDocs   int64          `json:"total_docs"`
	DatasetHash string         `json:"dataset_hash"`
	// Provenance is absent in datasets built before kestrel recorded it.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// TokenizerInfo identifies the tokenizer of a dataset.
type TokenizerInfo struct {
	Hash      string `json:"hash"`
	File      string `json:"file"`
	Source    string `json:"source,omitempty"`
	VocabSize int    `json:"vocab_size"`
	EOT       int32  `json:"eot"`
}

// ShardInfo is one shard file.
type ShardInfo struct {
	Source string `json:"source"`
	Split  string `json:"split"`
	File   string `json:"file"` // relative to the dataset directory
	SHA256 string `json:"sha256"`
	Tokens int64  `json:"tokens"`
	Docs   int64  `json:"docs"` // documents starting in this shard
	// DocIndex holds the offsets (within the shard) at which documents
	// start: unsigned LEB128 varints of the deltas, base64.
	DocIndex string `json:"doc_index"`
	// IDsFile lists the upstream ids of those documents, one JSON string
	// per line (verified against IDsSHA256 when first read).
	IDsFile   string `json:"ids_file"`
	IDsSHA256 string `json:"ids_sha256"`
}

// SourceTotals are the counts of one source.
type SourceTotals struct {
	Source      string `json:"source"`
	TrainTokens int64  `json:"train_tokens"`
	TrainDocs   int64  `json:"train_docs"`
	ValTokens   int64  `json:"val_tokens"`
	ValDocs     int64  `json:"val_docs"`
}

// DocStarts decodes the shard's document index.
func (s ShardInfo) DocStarts() ([]int64, error) {
	raw, err := base64.StdEncoding.DecodeString(s.DocIndex)
	if err != nil {
		return nil, fmt.Errorf("shard %s: doc_index: %w", s.File, err)
	}
	// Each entry takes at least one byte: a docs count the index cannot
	// hold is refused before it sizes anything.
	if s.Docs < 0 || s.Docs > int64(len(raw)) {
		return nil, fmt.Errorf("shard %s: docs %d: the doc_index (%d bytes) cannot hold them", s.File, s.Docs, len(raw))
	}
	if s.Tokens < 0 {
		return nil, fmt.Errorf("shard %s: tokens %d", s.File, s.Tokens)
	}
	out := make([]int64, 0, s.Docs)
	var prev int64
	for len(raw) > 0 {
		d, n := binary.Uvarint(raw)
		if n <= 0 {
			return nil, fmt.Errorf("shard %s: doc_index: bad varint", s.File)
		}
		raw = raw[n:]
		prev += int64(d)
		out = append(out, prev)
	}
	if int64(len(out)) != s.Docs {
		return nil, fmt.Errorf("shard %s: doc_index has %d documents, manifest says %d", s.File, len(out), s.Docs)
	}
	for i, v := range out {
		if v >= s.Tokens || (i > 0 && v <= out[i-1]) {
			return nil, fmt.Errorf("shard %s: doc_index entry %d (%d) out of order or beyond %d tokens", s.File, i, v, s.Tokens)
		}
	}
	return out, nil
}

func encodeDocIndex(starts []int64) string {
	var buf []byte
	var prev int64
	for _, s := range starts {
		buf = binary.AppendUvarint(buf, uint64(s-prev))
		prev = s
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// hashManifest computes the dataset hash of m.
func hashManifest(m Manifest) (string, error) {
	m.DatasetHash = ""
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:]), nil
}

// headerVersion is the version llm.c expects with magic.
func headerVersion(magic int32) int32 {
	if magic == MagicUint32 {
		return VersionUint32
	}
	return VersionUint16
}

// Header is the llm.c header of a shard file.
type Header struct {
	Magic, Version int32
	Tokens         int64
}

// TokenBytes is the width of one token under this header's magic (0 when
// the magic is not llm.c's).
func (h Header) TokenBytes() int {
	switch h.Magic {
	case MagicUint16:
		return 2
	case MagicUint32:
		return 4
	}
	return 0
}

// Legacy reports a uint32 header with kestrel's old version 1.
func (h Header) Legacy() bool {
	return h.Magic == MagicUint32 && h.Version == LegacyVersionUint32
}

// Check validates the header as llm.c would, plus kestrel's legacy uint32
// version, against the file size in bytes.
func (h Header) Check(size int64) error {
	w := h.TokenBytes()
	if w == 0 {
		return fmt.Errorf("magic %d is neither %d (uint16) nor %d (uint32)", h.Magic, MagicUint16, MagicUint32)
	}
	if h.Version != headerVersion(h.Magic) && !h.Legacy() {
		return fmt.Errorf("magic %d with version %d, want %d", h.Magic, h.Version, headerVersion(h.Magic))
	}
	if want := HeaderBytes + h.Tokens*int64(w); size != want {
		return fmt.Errorf("size %d bytes, header's %d tokens imply %d", size, h.Tokens, want)
	}
	return nil
}

// parseHeader decodes the first HeaderBytes of a shard.
func parseHeader(b []byte) Header {
	return Header{
		Magic:   int32(binary.LittleEndian.Uint32(b[0:])),
		Version: int32(binary.LittleEndian.Uint32(b[4:])),
		Tokens:  int64(binary.LittleEndian.Uint32(b[8:])),
	}
}

// ReadHeader reads and checks the header of the shard file at path (any
// llm.c token file, kestrel's or not).
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, fmt.Errorf("shard: %w", err)
	}
	defer f.Close()
	var b [HeaderBytes]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return Header{}, fmt.Errorf("shard %s: header: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return Header{}, fmt.Errorf("shard %s: %w", path, err)
	}
	h := parseHeader(b[:])
	if err := h.Check(st.Size()); err != nil {
		return h, fmt.Errorf("shard %s: %w", path, err)
	}
	return h, nil
}

// shardWriter writes the shards of one source/split.
type shardWriter struct {
	source, split string
	dir, prefix   string // build dir (absolute) and relative prefix
	width         int
	magic         int32
	maxTokens     int64
	seq           int
	f             *os.File
	tokens        int64
	starts        []int64
	ids           []string // ids of the documents starting in this shard
	buf           []byte
	done          []ShardInfo
}

func (w *shardWriter) open() error {
	name := fmt.Sprintf("%s_%s_%06d.bin", w.source, w.split, w.seq)
	f, err := os.Create(filepath.Join(w.dir, name))
	if err != nil {
		return fmt.Errorf("shard %s: %w", name, err)
	}
	w.f, w.tokens, w.starts, w.ids = f, 0, nil, nil
	var hdr [HeaderBytes]byte // patched in close
	if _, err := f.Write(hdr[:]); err != nil {
		return fmt.Errorf("shard %s: %w", name, err)
	}
	return nil
}

func (w *shardWriter) name() string {
	return fmt.Sprintf("%s_%s_%06d.bin", w.source, w.split, w.seq)
}

// write appends one document's tokens.
func (w *shardWriter) write(docID string, ids []int32) error {
	first := true
	for len(ids) > 0 {
		if w.f == nil {
			if err := w.open(); err != nil {
				return err
			}
		}
		if first {
			w.starts = append(w.starts, w.tokens)
			w.ids = append(w.ids, docID)
			first = false
		}
		n := min(int64(len(ids)), w.maxTokens-w.tokens)
		w.buf = w.buf[:0]
		for _, id := range ids[:n] {
			if w.width == 2 {
				w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(id))
			} else {
				w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(id))
			}
		}
		if _, err := w.f.Write(w.buf); err != nil {
			return fmt.Errorf("shard %s: %w", w.name(), err)
		}
		w.tokens += n
		ids = ids[n:]
		if w.tokens == w.maxTokens {
			if err := w.close(); err != nil {
				return err
			}
		}
	}
	return nil
}

// close finishes the current shard: header, fsync, hash.
func (w *shardWriter) close() error {
	if w.f == nil {
		return nil
	}
	name := w.name()
	var hdr [HeaderBytes]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(w.magic))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(headerVersion(w.magic)))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(w.tokens))
	if _, err := w.f.WriteAt(hdr[:], 0); err != nil {
		w.f.Close()
		return fmt.Errorf("shard %s: %w", name, err)
	}
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return fmt.Errorf("shard %s: %w", name, err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("shard %s: %w", name, err)
	}
	// the file hash covers the header too, so re-read the finished file
	sum, err := fileSHA256(filepath.Join(w.dir, name))
	if err != nil {
		return fmt.Errorf("shard %s: %w", name, err)
	}
	// document ids: a sidecar of JSON strings, one per line
	var ids bytes.Buffer
	for _, id := range w.ids {
		b, _ := json.Marshal(id)
		ids.Write(b)
		ids.WriteByte('\n')
	}
	idsName := strings.TrimSuffix(name, ".bin") + ".ids"
	if err := os.WriteFile(filepath.Join(w.dir, idsName), ids.Bytes(), 0o644); err != nil {
		return fmt.Errorf("shard %s: %w", idsName, err)
	}
	idsSum := sha256.Sum256(ids.Bytes())
	w.done = append(w.done, ShardInfo{
		Source: w.source, Split: w.split, File: w.prefix + "/" + name, SHA256: sum,
		Tokens: w.tokens, Docs: int64(len(w.starts)), DocIndex: encodeDocIndex(w.starts),
		IDsFile: w.prefix + "/" + idsName, IDsSHA256: hex.EncodeToString(idsSum[:]),
	})
	w.f = nil
	w.seq++
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validName checks that a source tag can be part of a file name.
func validName(s string) error {
	if s == "" {
		return errors.New("empty source tag")
	}
	for _, r := range s {
		if !(r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("source tag %q: use letters, digits, '-' and '.' only", s)
		}
	}
	return nil
}

// Build tokenizes docs (in parallel, output in input order) into shards
// under outDir and writes outDir/manifest.json and outDir/tokenizer.json.
// tokPath is recorded in the manifest as where the tokenizer came from.
func Build(ctx context.Context, docs iter.Seq2[document.Doc, error], tok *tokenizer.Tokenizer, tokPath string, cfg Config, outDir string) (*Manifest, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !tok.HasEOT() {
		return nil, errors.New("shards: the tokenizer has no end-of-text token to separate documents")
	}
	sep := tok.EOT()
	if cfg.Separator == "bos" {
		sep, _ = tok.BOS()
	}
	// the build is staged under a temporary name and installed once its
	// name (a hash of its contents) is known
	buildDir, err := atomicfile.NewDir(filepath.Join(outDir, "shards"), "build")
	if err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	defer buildDir.Abort()
	stage := buildDir.Path()
	width, magic := 2, int32(MagicUint16)
	if tok.VocabSize() > 65536 {
		width, magic = 4, MagicUint32
	}
	writers := map[string]*shardWriter{}
	var order []string
	writer := func(source, split string) (*shardWriter, error) {
		key := source + "\x00" + split
		if w, ok := writers[key]; ok {
			return w, nil
		}
		if err := validName(source); err != nil {
			return nil, err
		}
		w := &shardWriter{source: source, split: split, dir: stage, width: width, magic: magic, maxTokens: int64(cfg.ShardTokens)}
		writers[key] = w
		order = append(order, key)
		return w, nil
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type item struct {
		doc document.Doc
		ids []int32
	}
	var batch []item
	batchBytes := 0
	flush := func() error {
		var wg sync.WaitGroup
		var next int64
		var mu sync.Mutex
		for g := 0; g < workers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= int64(len(batch)) {
						return
					}
					it := &batch[i]
					ids := make([]int32, 0, len(it.doc.Text)/3+2)
					if cfg.Separator == "bos" {
						ids = append(ids, sep)
					}
					ids = tok.AppendEncode(ids, it.doc.Text)
					if cfg.Separator == "eos" {
						ids = append(ids, sep)
					}
					it.ids = ids
				}
			}()
		}
		wg.Wait()
		for _, it := range batch {
			split := Train
			key := it.doc.ID
			if key == "" {
				key = it.doc.Text // no id: the text decides, still deterministic
			}
			if cfg.IsVal(key) {
				split = Val
			}
			w, err := writer(it.doc.Source, split)
			if err != nil {
				return fmt.Errorf("document %q: %w", it.doc.ID, err)
			}
			if err := w.write(it.doc.ID, it.ids); err != nil {
				return err
			}
		}
		batch, batchBytes = batch[:0], 0
		return ctx.Err()
	}
	for d, err := range docs {
		if err != nil {
			return nil, fmt.Errorf("shards: reading documents: %w", err)
		}
		batch = append(batch, item{doc: d})
		batchBytes += len(d.Text)
		if batchBytes >= 8<<20 || len(batch) >= 4096 {
			if err := flush(); err != nil {
				return nil, fmt.Errorf("shards: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	sort.Strings(order)
	m := Manifest{
		Format: Format, TokenBytes: width, ShardTokens: cfg.ShardTokens, ValFraction: cfg.ValFraction,
		Seed: cfg.Seed, Separator: cfg.Separator, SeparatorID: sep, Shards: []ShardInfo{},
		Tokenizer:  TokenizerInfo{Hash: tok.Hash(), Source: tokPath, VocabSize: tok.VocabSize(), EOT: tok.EOT()},
		Provenance: cfg.Provenance,
	}
	totals := map[string]*SourceTotals{}
	for _, key := range order {
		w := writers[key]
		if err := w.close(); err != nil {
			return nil, fmt.Errorf("shards: %w", err)
		}
		st := totals[w.source]
		if st == nil {
			st = &SourceTotals{Source: w.source}
			totals[w.source] = st
		}
		for _, s := range w.done {
			if w.split == Train {
				st.TrainTokens += s.Tokens
				st.TrainDocs += s.Docs
			} else {
				st.ValTokens += s.Tokens
				st.ValDocs += s.Docs
			}
			m.TotalTokens += s.Tokens
			m.TotalDocs += s.Docs
		}
	}
	if err := tok.Save(filepath.Join(stage, "tokenizer.json")); err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	// the build name is a hash of the shard hashes: same input, same name
	bh := sha256.New()
	for _, key := range order {
		for _, s := range writers[key].done {
			fmt.Fprintf(bh, "%s %s\n", s.File, s.SHA256)
		}
	}
	bh.Write([]byte(tok.Hash()))
	build := hex.EncodeToString(bh.Sum(nil))[:16]
	m.Build = build
	prefix := "shards/" + build
	m.Tokenizer.File = prefix + "/tokenizer.json"
	for _, key := range order {
		for _, s := range writers[key].done {
			s.File = prefix + s.File // s.File was "/name"
			s.IDsFile = prefix + s.IDsFile
			m.Shards = append(m.Shards, s)
		}
	}
	srcNames := make([]string, 0, len(totals))
	for s := range totals {
		srcNames = append(srcNames, s)
	}
	sort.Strings(srcNames)
	for _, s := range srcNames {
		m.Sources = append(m.Sources, *totals[s])
	}
	if m.DatasetHash, err = hashManifest(m); err != nil {
		return nil, fmt.Errorf("shards: manifest: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("shards: manifest: %w", err)
	}
	final := filepath.Join(outDir, prefix)
	if _, err := os.Stat(final); err == nil {
		// an identical build already exists: keep it
		buildDir.Abort()
	} else if err := buildDir.Install(final); err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(outDir, "manifest.json"), append(data, '\n')); err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	if err := tok.Save(filepath.Join(outDir, "tokenizer.json")); err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	// remove builds the manifest no longer names
	entries, _ := os.ReadDir(filepath.Join(outDir, "shards"))
	for _, e := range entries {
		// (staging dirs of other, possibly running, builds are left alone)
		if e.IsDir() && e.Name() != build && isBuildName(e.Name()) {
			os.RemoveAll(filepath.Join(outDir, "shards", e.Name()))
		}
	}
	return &m, nil
}

func isBuildName(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
