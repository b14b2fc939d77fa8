package shards

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kestrel-lm/kestrel/tokenizer"
)

// Dataset is an opened dataset directory.
type Dataset struct {
	dir     string
	m       Manifest
	shards  []*shardFile // parallel to m.Shards
	mu      sync.Mutex
	streams map[string]*Stream
	tokOnce sync.Once
	tok     *tokenizer.Tokenizer
	tokErr  error
}

// shardFile is a shard opened and verified on first use.
type shardFile struct {
	info  ShardInfo
	path  string
	width int
	magic int32
	once  sync.Once
	f     *os.File
	err   error
}

// Open reads dir/manifest.json and checks it (format, dataset hash,
// document indexes). Shard files are checked on first read.
func Open(dir string) (*Dataset, error) {
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("dataset %s: manifest.json: %w", dir, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("dataset %s: manifest.json: format %q, want %q", dir, m.Format, Format)
	}
	h, err := hashManifest(m)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: manifest.json: %w", dir, err)
	}
	if h != m.DatasetHash {
		return nil, fmt.Errorf("dataset %s: manifest.json: dataset_hash %s does not match its content (%s): the manifest was edited or damaged", dir, m.DatasetHash, h)
	}
	if m.TokenBytes != 2 && m.TokenBytes != 4 {
		return nil, fmt.Errorf("dataset %s: manifest.json: token_bytes %d", dir, m.TokenBytes)
	}
	ds := &Dataset{dir: dir, m: m, streams: map[string]*Stream{}}
	magic := int32(MagicUint16)
	if m.TokenBytes == 4 {
		magic = MagicUint32
	}
	if leaves(m.Tokenizer.File) {
		return nil, fmt.Errorf("dataset %s: manifest.json: tokenizer.file %q leaves the dataset", dir, m.Tokenizer.File)
	}
	for _, s := range m.Shards {
		if leaves(s.File) {
			return nil, fmt.Errorf("dataset %s: shard %s: path leaves the dataset", dir, s.File)
		}
		if leaves(s.IDsFile) {
			return nil, fmt.Errorf("dataset %s: shard %s: ids_file %q leaves the dataset", dir, s.File, s.IDsFile)
		}
		if _, err := s.DocStarts(); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", dir, err)
		}
		ds.shards = append(ds.shards, &shardFile{info: s, path: filepath.Join(dir, filepath.FromSlash(s.File)), width: m.TokenBytes, magic: magic})
	}
	return ds, nil
}

// leaves reports whether a path of the manifest could name a file outside
// the dataset directory.
func leaves(p string) bool { return strings.Contains(p, "..") || filepath.IsAbs(p) }

// Manifest returns the dataset's manifest.
func (d *Dataset) Manifest() *Manifest { return &d.m }

// Dir is the dataset directory.
func (d *Dataset) Dir() string { return d.dir }

// Hash is the dataset hash of the manifest.
func (d *Dataset) Hash() string { return d.m.DatasetHash }

// Sources lists the source tags, sorted.
func (d *Dataset) Sources() []string {
	out := make([]string, 0, len(d.m.Sources))
	for _, s := range d.m.Sources {
		out = append(out, s.Source)
	}
	return out
}

// Shards lists the shards of one source and split, in stream order.
func (d *Dataset) Shards(source, split string) []ShardInfo {
	var out []ShardInfo
	for _, s := range d.m.Shards {
		if s.Source == source && s.Split == split {
			out = append(out, s)
		}
	}
	return out
}

// Tokenizer loads the tokenizer the dataset was built with and checks its
// hash against the manifest.
func (d *Dataset) Tokenizer() (*tokenizer.Tokenizer, error) {
	d.tokOnce.Do(func() {
		p := filepath.Join(d.dir, filepath.FromSlash(d.m.Tokenizer.File))
		t, err := tokenizer.Load(p)
		if err != nil {
			d.tokErr = fmt.Errorf("dataset %s: %w", d.dir, err)
			return
		}
		if t.Hash() != d.m.Tokenizer.Hash {
			d.tokErr = fmt.Errorf("dataset %s: tokenizer %s has hash %s, manifest says %s", d.dir, d.m.Tokenizer.File, t.Hash(), d.m.Tokenizer.Hash)
			return
		}
		d.tok = t
	})
	return d.tok, d.tokErr
}

// verify opens the shard and checks size, header and sha256 (once).
func (s *shardFile) open() (*os.File, error) {
	s.once.Do(func() {
		name := s.info.File
		f, err := os.Open(s.path)
		if err != nil {
			s.err = fmt.Errorf("shard %s: %w", name, err)
			return
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			s.err = fmt.Errorf("shard %s: %w", name, err)
			return
		}
		if want := HeaderBytes + s.info.Tokens*int64(s.width); st.Size() != want {
			f.Close()
			s.err = fmt.Errorf("shard %s: size %d bytes, manifest implies %d (truncated or replaced)", name, st.Size(), want)
			return
		}
		var hdr [HeaderBytes]byte
		if _, err := f.ReadAt(hdr[:], 0); err != nil {
			f.Close()
			s.err = fmt.Errorf("shard %s: header: %w", name, err)
			return
		}
		h := parseHeader(hdr[:])
		if want := headerVersion(s.magic); h.Magic != s.magic || (h.Version != want && !h.Legacy()) || h.Tokens != s.info.Tokens {
			f.Close()
			s.err = fmt.Errorf("shard %s: header magic %d version %d tokens %d, want %d %d %d", name, h.Magic, h.Version, h.Tokens, s.magic, want, s.info.Tokens)
			return
		}
		sum, err := fileSHA256(s.path)
		if err != nil {
			f.Close()
			s.err = fmt.Errorf("shard %s: %w", name, err)
			return
		}
		if sum != s.info.SHA256 {
			f.Close()
			s.err = fmt.Errorf("shard %s: sha256 %s, manifest says %s (corrupted)", name, sum, s.info.SHA256)
			return
		}
		s.f = f
	})
	return s.f, s.err
}

// Verify checks every shard now (size, header, sha256) and returns the
// first error.
func (d *Dataset) Verify() error {
	for _, s := range d.shards {
		if _, err := s.open(); err != nil {
			return fmt.Errorf("dataset %s: %w", d.dir, err)
		}
	}
	return nil
}

// LegacyShards returns the shard files (relative to the dataset) whose
// header carries kestrel's old uint32 version 1: kestrel reads them, llm.c
// rejects them ("Bad version"); rebuild the dataset to get version 7.
func (d *Dataset) LegacyShards() ([]string, error) {
	var out []string
	for _, s := range d.shards {
		h, err := ReadHeader(s.path)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", d.dir, err)
		}
		if h.Legacy() {
			out = append(out, s.info.File)
		}
	}
	return out, nil
}

// Close closes the shard files.
func (d *Dataset) Close() error {
	for _, s := range d.shards {
		if s.f != nil {
			s.f.Close()
		}
	}
	return nil
}

// Stream is one source's split: its shards concatenated into one token
// sequence, with document starts. Safe for concurrent use.
type Stream struct {
	Source, Split string
	shards        []*shardFile
	base          []int64 // base[i] = offset of shard i; base[len] = Len
	starts        []int64
	bufPool       sync.Pool
	dir           string
	idsOnce       sync.Once
	ids           []string
	idsErr        error
}

// Stream returns the stream of source/split ("train" or "val"). A source
// without documents in that split gives an empty stream.
func (d *Dataset) Stream(source, split string) (*Stream, error) {
	if split != Train && split != Val {
		return nil, fmt.Errorf("dataset %s: split %q: want train or val", d.dir, split)
	}
	found := false
	for _, s := range d.m.Sources {
		found = found || s.Source == source
	}
	if !found {
		return nil, fmt.Errorf("dataset %s: no source %q (have %s)", d.dir, source, strings.Join(d.Sources(), ", "))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	key := source + "\x00" + split
	if st, ok := d.streams[key]; ok {
		return st, nil
	}
	st := &Stream{Source: source, Split: split, base: []int64{0}, dir: d.dir}
	for i, s := range d.m.Shards {
		if s.Source != source || s.Split != split {
			continue
		}
		off := st.base[len(st.base)-1]
		starts, err := s.DocStarts()
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", d.dir, err)
		}
		for _, v := range starts {
			st.starts = append(st.starts, off+v)
		}
		st.shards = append(st.shards, d.shards[i])
		st.base = append(st.base, off+s.Tokens)
	}
	d.streams[key] = st
	return st, nil
}

// Len is the number of tokens.
func (s *Stream) Len() int64 { return s.base[len(s.base)-1] }

// NumDocs is the number of documents.
func (s *Stream) NumDocs() int64 { return int64(len(s.starts)) }

// DocStart is the token offset at which document i starts.
func (s *Stream) DocStart(i int64) int64 { return s.starts[i] }

// DocStarts returns the offsets of all document starts (do not modify).
func (s *Stream) DocStarts() []int64 { return s.starts }

// DocsIn returns the document starts in [off, off+n).
func (s *Stream) DocsIn(off, n int64) []int64 {
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] >= off })
	j := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] >= off+n })
	return s.starts[i:j]
}

// ReadAt fills dst with tokens [off, off+len(dst)). The first read of each
// shard verifies it.
func (s *Stream) ReadAt(dst []int32, off int64) error {
	if off < 0 || off+int64(len(dst)) > s.Len() {
		return fmt.Errorf("stream %s/%s: read [%d, %d) outside [0, %d)", s.Source, s.Split, off, off+int64(len(dst)), s.Len())
	}
	for len(dst) > 0 {
		i := sort.Search(len(s.shards), func(i int) bool { return s.base[i+1] > off }) // shard holding off
		sh := s.shards[i]
		f, err := sh.open()
		if err != nil {
			return err
		}
		local := off - s.base[i]
		n := min(int64(len(dst)), s.base[i+1]-off)
		nb := int(n) * sh.width
		bp, _ := s.bufPool.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		if cap(*bp) < nb {
			*bp = make([]byte, nb)
		}
		buf := (*bp)[:nb]
		if _, err := f.ReadAt(buf, HeaderBytes+local*int64(sh.width)); err != nil && err != io.EOF {
			s.bufPool.Put(bp)
			return fmt.Errorf("shard %s: %w", sh.info.File, err)
		}
		if sh.width == 2 {
			for k := range n {
				dst[k] = int32(binary.LittleEndian.Uint16(buf[2*k:]))
			}
		} else {
			for k := range n {
				dst[k] = int32(binary.LittleEndian.Uint32(buf[4*k:]))
			}
		}
		s.bufPool.Put(bp)
		dst = dst[n:]
		off += n
	}
	return nil
}

// Doc returns the tokens of document i (separator included).
func (s *Stream) Doc(i int64) ([]int32, error) {
	end := s.Len()
	if i+1 < int64(len(s.starts)) {
		end = s.starts[i+1]
	}
	out := make([]int32, end-s.starts[i])
	return out, s.ReadAt(out, s.starts[i])
}

// DocIDs returns the upstream ids of the stream's documents, read from the
// shards' id sidecars (verified against their sha256) on first use.
func (s *Stream) DocIDs() ([]string, error) {
	s.idsOnce.Do(func() {
		ids := make([]string, 0, len(s.starts))
		for _, sh := range s.shards {
			p := filepath.Join(s.dir, filepath.FromSlash(sh.info.IDsFile))
			data, err := os.ReadFile(p)
			if err != nil {
				s.idsErr = fmt.Errorf("shard %s: ids: %w", sh.info.File, err)
				return
			}
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != sh.info.IDsSHA256 {
				s.idsErr = fmt.Errorf("shard ids %s: sha256 mismatch (corrupted)", sh.info.IDsFile)
				return
			}
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			if len(data) == 0 {
				lines = nil
			}
			if int64(len(lines)) != sh.info.Docs {
				s.idsErr = fmt.Errorf("shard ids %s: %d ids for %d documents", sh.info.IDsFile, len(lines), sh.info.Docs)
				return
			}
			for k, l := range lines {
				var id string
				if err := json.Unmarshal([]byte(l), &id); err != nil {
					s.idsErr = fmt.Errorf("shard ids %s:%d: %w", sh.info.IDsFile, k+1, err)
					return
				}
				ids = append(ids, id)
			}
		}
		s.ids = ids
	})
	return s.ids, s.idsErr
}

// DocID is the upstream id of document i, or "" when the ids cannot be
// read (DocIDs reports why). It satisfies the loader's DocIDer.
func (s *Stream) DocID(i int64) string {
	ids, err := s.DocIDs()
	if err != nil || i < 0 || i >= int64(len(ids)) {
		return ""
	}
	return ids[i]
}
