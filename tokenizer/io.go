package tokenizer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
)

// byteToRune is GPT-2's bytes_to_unicode table: every byte maps to a
// printable rune, so byte-level tokens can be written as JSON strings.
var byteToRune [256]rune
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevel renders token bytes in the bytes_to_unicode alphabet.
func byteLevel(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(byteToRune[c])
	}
	return sb.String()
}

// fromByteLevel is the inverse of byteLevel.
func fromByteLevel(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := runeToByte[r]
		if !ok {
			return nil, fmt.Errorf("rune %U is not in the byte-level alphabet", r)
		}
		out = append(out, b)
	}
	return out, nil
}

// Load reads a tokenizer from path: a Hugging Face tokenizer.json, a
// tiktoken rank file (*.tiktoken: base64 token, space, rank per line), a
// vocab.json (with merges.txt beside it), or a directory holding one of
// these (tried in that order).
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if st.IsDir() {
		if p := filepath.Join(path, "tokenizer.json"); exists(p) {
			return Load(p)
		}
		if m, _ := filepath.Glob(filepath.Join(path, "*.tiktoken")); len(m) == 1 {
			return Load(m[0])
		} else if len(m) > 1 {
			return nil, fmt.Errorf("tokenizer %s: several *.tiktoken files; name one", path)
		}
		if p := filepath.Join(path, "vocab.json"); exists(p) {
			return Load(p)
		}
		return nil, fmt.Errorf("tokenizer %s: no tokenizer.json, *.tiktoken or vocab.json in the directory", path)
	}
	var t *Tokenizer
	switch {
	case strings.HasSuffix(path, ".tiktoken"):
		t, err = loadTiktoken(path)
	case filepath.Base(path) == "vocab.json" || strings.HasSuffix(path, "-vocab.json"):
		merges := filepath.Join(filepath.Dir(path), "merges.txt")
		if alt := strings.TrimSuffix(path, "vocab.json") + "merges.txt"; exists(alt) {
			merges = alt
		}
		t, err = loadVocabMerges(path, merges)
	default:
		t, err = loadHF(path)
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return t, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// loadTiktoken reads a rank file. Merges are derived: the token of rank r
// splits into the two parts that BPE with ranks < r produces. The encoder
// then follows tiktoken: a pre-token that is a token is not split. The
// pre-tokenizer and special tokens come from the encoding's JSON beside
// the file (see tiktokenEncoding).
func loadTiktoken(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type ranked struct {
		rank, line int
		tok        []byte
	}
	var toks []ranked
	maxRank := -1
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		tok, rk, ok := strings.Cut(s, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"base64 rank\"", line)
		}
		b, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			return nil, fmt.Errorf("line %d: token: %w", line, err)
		}
		r, err := strconv.Atoi(rk)
		if err != nil || r < 0 || r > 1<<24 {
			return nil, fmt.Errorf("line %d: bad rank %q", line, rk)
		}
		toks = append(toks, ranked{r, line, b})
		maxRank = max(maxRank, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// The ranks are 0..n-1 (a few holes allowed): the vocabulary is sized
	// by the tokens the file holds, never by one rank alone (before, the
	// 14-byte line "AA== 16777216" cost 400 MB and seconds).
	if maxRank >= 2*len(toks)+256 {
		return nil, fmt.Errorf("rank %d for %d tokens: the ranks are not 0..n-1", maxRank, len(toks))
	}
	vocab := make([][]byte, maxRank+1)
	for _, rt := range toks {
		if vocab[rt.rank] != nil {
			return nil, fmt.Errorf("line %d: rank %d appears twice", rt.line, rt.rank)
		}
		vocab[rt.rank] = rt.tok
	}
	enc, err := tiktokenEncoding(path, len(vocab))
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: vocab, ignoreMerges: true}
	if t.split, t.pattern, err = newSplitter(enc.Pattern); err != nil {
		return nil, err
	}
	if err := t.deriveMerges(); err != nil {
		return nil, err
	}
	t.added = enc.special()
	if err := t.build(); err != nil {
		return nil, err
	}
	return t, nil
}

// deriveMerges computes merges from ranks: for each multi-byte token in
// rank order, BPE its bytes using only lower ranks; it must end as two
// parts, which form its merge.
func (t *Tokenizer) deriveMerges() error {
	t.tokID = make(map[string]int32, len(t.vocab))
	for id, b := range t.vocab {
		if b != nil {
			t.tokID[string(b)] = int32(id)
		}
	}
	for c := 0; c < 256; c++ {
		id, ok := t.tokID[string([]byte{byte(c)})]
		if !ok {
			return fmt.Errorf("vocabulary lacks the single byte 0x%02x: not a byte-level BPE", c)
		}
		t.byteID[c] = id
	}
	t.mergeOf = make(map[uint64]uint64)
	st := &encState{}
	for id, b := range t.vocab {
		if len(b) < 2 {
			continue
		}
		parts := t.bpeSmall(st, nil, string(b))
		if len(parts) != 2 {
			return fmt.Errorf("token %d (%q): lower ranks split it into %d parts, not 2", id, b, len(parts))
		}
		t.merges = append(t.merges, [2]int32{parts[0], parts[1]})
		t.mergeOf[uint64(parts[0])<<32|uint64(parts[1])] = uint64(len(t.merges)-1)<<32 | uint64(id)
	}
	return nil
}

// loadVocabMerges reads GPT-2's vocab.json + merges.txt. Tokens of the
// vocabulary that are not byte-level strings of merges (e.g.
// "<|endoftext|>") become special tokens.
func loadVocabMerges(vocabPath, mergesPath string) (*Tokenizer, error) {
	vb, err := os.ReadFile(vocabPath)
	if err != nil {
		return nil, err
	}
	var v map[string]int64
	if err := json.Unmarshal(vb, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", vocabPath, err)
	}
	mb, err := os.ReadFile(mergesPath)
	if err != nil {
		return nil, err
	}
	var merges [][2]string
	for i, l := range strings.Split(string(mb), "\n") {
		l = strings.TrimRight(l, "\r")
		if l == "" || (i == 0 && strings.HasPrefix(l, "#version")) {
			continue
		}
		a, b, ok := strings.Cut(l, " ")
		if !ok || strings.Contains(b, " ") {
			return nil, fmt.Errorf("%s:%d: want two tokens separated by a space", mergesPath, i+1)
		}
		merges = append(merges, [2]string{a, b})
	}
	var special []AddedToken
	for s, id := range v {
		if strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") {
			special = append(special, AddedToken{ID: int32(id), Content: s, Special: true})
		}
	}
	return assemble(v, merges, special, GPT2Pattern)
}

// assemble builds a tokenizer from byte-level vocab strings, merge pairs
// and added tokens; vocabulary entries of added special tokens are not
// ordinary tokens.
func assemble(v map[string]int64, merges [][2]string, added []AddedToken, pattern string) (*Tokenizer, error) {
	t := &Tokenizer{}
	var err error
	if t.split, t.pattern, err = newSplitter(pattern); err != nil {
		return nil, err
	}
	addedByID := map[int32]AddedToken{}
	for _, a := range added {
		if a.ID < 0 || a.ID > 1<<26 {
			return nil, fmt.Errorf("added token %q: id %d out of range", a.Content, a.ID)
		}
		addedByID[a.ID] = a
	}
	// Ids are bounded by the entries there are (a few holes allowed), so a
	// tiny file cannot size a huge vocabulary (before, one id of 1<<26
	// cost 1.5 GB).
	bound := int64(2*(len(v)+len(added)) + 256)
	for _, a := range added {
		if int64(a.ID) >= bound {
			return nil, fmt.Errorf("added token %q: id %d out of range for %d tokens", a.Content, a.ID, len(v)+len(added))
		}
	}
	max := int64(-1)
	for s, id := range v {
		if id < 0 || id > 1<<26 || id >= bound {
			return nil, fmt.Errorf("vocab %q: id %d out of range for %d tokens", s, id, len(v)+len(added))
		}
		if id > max {
			max = id
		}
	}
	t.vocab = make([][]byte, max+1)
	for s, id := range v {
		if a, ok := addedByID[int32(id)]; ok {
			// an added token's vocab entry may be byte-level or raw
			// (GPT-NeoX writes runs of spaces raw): its content rules
			if !a.Special {
				t.vocab[id] = []byte(a.Content)
			}
			continue
		}
		b, err := fromByteLevel(s)
		if err != nil {
			return nil, fmt.Errorf("vocab %q: %w", s, err)
		}
		if t.vocab[id] != nil {
			return nil, fmt.Errorf("vocab: id %d appears twice", id)
		}
		t.vocab[id] = b
	}
	ids := make(map[string]int64, len(v))
	for s, id := range v {
		ids[s] = id
	}
	for i, m := range merges {
		a, ok1 := ids[m[0]]
		b, ok2 := ids[m[1]]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("merge %d (%q %q): token not in vocab", i, m[0], m[1])
		}
		t.merges = append(t.merges, [2]int32{int32(a), int32(b)})
	}
	sort.Slice(added, func(i, j int) bool { return added[i].ID < added[j].ID })
	t.added = added
	if err := t.build(); err != nil {
		return nil, err
	}
	return t, nil
}

// hfFile is the part of a Hugging Face tokenizer.json that kestrel reads.
type hfFile struct {
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Type                    string           `json:"type"`
		Dropout                 *float64         `json:"dropout"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
		ByteFallback            bool             `json:"byte_fallback"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		Vocab                   map[string]int64 `json:"vocab"`
		Merges                  json.RawMessage  `json:"merges"`
	} `json:"model"`
}

type hfPreTok struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
	Pattern        *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior      string     `json:"behavior"`
	Invert        bool       `json:"invert"`
	PreTokenizers []hfPreTok `json:"pretokenizers"`
}

// loadHF reads a Hugging Face tokenizer.json with a byte-level BPE model.
func loadHF(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	m := f.Model
	if m.Type != "BPE" {
		return nil, fmt.Errorf("model.type %q: only BPE is supported", m.Type)
	}
	if m.ByteFallback || (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") || (m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") {
		return nil, errors.New("model: byte_fallback, continuing_subword_prefix and end_of_word_suffix are not supported (byte-level BPE only)")
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, errors.New("model.dropout: BPE dropout is not supported")
	}
	var merges [][2]string
	var asStrings []string
	if err := json.Unmarshal(m.Merges, &asStrings); err == nil {
		for i, s := range asStrings {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("model.merges[%d] %q: want two tokens separated by a space", i, s)
			}
			merges = append(merges, [2]string{a, b})
		}
	} else if err := json.Unmarshal(m.Merges, &merges); err != nil {
		return nil, fmt.Errorf("model.merges: %w", err)
	}
	pattern, prefix, err := hfPattern(f.PreTokenizer)
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	nfc := false
	if len(f.Normalizer) > 0 && string(f.Normalizer) != "null" {
		var n struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(f.Normalizer, &n); err != nil {
			return nil, fmt.Errorf("normalizer: %w", err)
		}
		if n.Type != "NFC" {
			return nil, fmt.Errorf("normalizer %q: only NFC is supported", n.Type)
		}
		nfc = true
	}
	var added []AddedToken
	for _, a := range f.AddedTokens {
		added = append(added, AddedToken{ID: a.ID, Content: a.Content, Special: a.Special, SingleWord: a.SingleWord, LStrip: a.LStrip, RStrip: a.RStrip, Normalized: a.Normalized})
	}
	t, err := assemble(m.Vocab, merges, added, pattern)
	if err != nil {
		return nil, err
	}
	t.ignoreMerges, t.nfc, t.addPrefixSpace = m.IgnoreMerges, nfc, prefix
	return t, nil
}

// hfPattern maps the supported pre-tokenizers to a pattern: ByteLevel with
// use_regex (GPT-2), or Sequence[Split(Regex, Isolated), ByteLevel without
// regex].
func hfPattern(raw json.RawMessage) (pattern string, prefix bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, errors.New("missing (want ByteLevel)")
	}
	var p hfPreTok
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", false, err
	}
	list := []hfPreTok{p}
	if p.Type == "Sequence" {
		list = p.PreTokenizers
	}
	sawByteLevel := false
	for _, q := range list {
		switch q.Type {
		case "ByteLevel":
			sawByteLevel = true
			prefix = q.AddPrefixSpace
			if q.UseRegex == nil || *q.UseRegex {
				if pattern != "" {
					return "", false, errors.New("two regex splits")
				}
				pattern = GPT2Pattern
			}
		case "Split":
			if q.Pattern == nil || q.Pattern.Regex == nil || q.Invert || q.Behavior != "Isolated" {
				return "", false, errors.New("only Split with a Regex pattern, behavior Isolated, invert false is supported")
			}
			if pattern != "" {
				return "", false, errors.New("two regex splits")
			}
			pattern = *q.Pattern.Regex
		default:
			return "", false, fmt.Errorf("pre-tokenizer type %q is not supported", q.Type)
		}
	}
	if !sawByteLevel {
		return "", false, errors.New("no ByteLevel pre-tokenizer: not a byte-level BPE")
	}
	if pattern == "" {
		return "", false, errors.New("no splitting regex")
	}
	return pattern, prefix, nil
}

// jsonString appends s as a JSON string without HTML escaping.
func jsonString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029 || r == utf8.RuneError:
			fmt.Fprintf(buf, `\u%04x`, r)
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
}

// Marshal returns the canonical Hugging Face tokenizer.json of t: the same
// tokenizer always gives the same bytes.
func (t *Tokenizer) Marshal() ([]byte, error) {
	for _, a := range t.added {
		if !utf8.ValidString(a.Content) {
			return nil, fmt.Errorf("added token %d: content is not valid UTF-8", a.ID)
		}
	}
	var b bytes.Buffer
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, a := range t.added {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    {\"id\": %d, \"content\": ", a.ID)
		jsonString(&b, a.Content)
		fmt.Fprintf(&b, ", \"single_word\": %t, \"lstrip\": %t, \"rstrip\": %t, \"normalized\": %t, \"special\": %t}", a.SingleWord, a.LStrip, a.RStrip, a.Normalized, a.Special)
	}
	if len(t.added) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("],\n")
	if t.nfc {
		b.WriteString("  \"normalizer\": {\"type\": \"NFC\"},\n")
	} else {
		b.WriteString("  \"normalizer\": null,\n")
	}
	if t.pattern == GPT2Pattern {
		fmt.Fprintf(&b, "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": %t, \"trim_offsets\": true, \"use_regex\": true},\n", t.addPrefixSpace)
	} else {
		b.WriteString("  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": ")
		jsonString(&b, t.pattern)
		fmt.Fprintf(&b, "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": %t, \"trim_offsets\": true, \"use_regex\": false}]},\n", t.addPrefixSpace)
	}
	b.WriteString("  \"post_processor\": null,\n")
	b.WriteString("  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n")
	fmt.Fprintf(&b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": %t,\n    \"vocab\": {", t.ignoreMerges)
	first := true
	addedByID := map[int32]string{}
	for _, a := range t.added {
		addedByID[a.ID] = a.Content
	}
	for id := 0; id < t.size; id++ {
		var s string
		if c, ok := addedByID[int32(id)]; ok {
			s = c
		} else if id < len(t.vocab) && t.vocab[id] != nil {
			s = byteLevel(t.vocab[id])
		} else if c, ok := addedByID[int32(id)]; ok {
			s = c
		} else {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString("\n      ")
		jsonString(&b, s)
		fmt.Fprintf(&b, ": %d", id)
	}
	b.WriteString("\n    },\n    \"merges\": [")
	for i, m := range t.merges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n      ")
		jsonString(&b, byteLevel(t.vocab[m[0]])+" "+byteLevel(t.vocab[m[1]]))
	}
	b.WriteString("\n    ]\n  }\n}\n")
	return b.Bytes(), nil
}

// Save writes t as a Hugging Face tokenizer.json, atomically (temporary
// file, then rename).
func (t *Tokenizer) Save(path string) error {
	data, err := t.Marshal()
	if err != nil {
		return fmt.Errorf("save tokenizer %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("save tokenizer: %w", err)
	}
	return nil
}

// Hash is the hex sha256 of the canonical tokenizer.json (Marshal): two
// tokenizers with the same hash encode identically.
func (t *Tokenizer) Hash() string {
	t.hashOnce.Do(func() {
		data, err := t.Marshal()
		if err != nil {
			data = []byte(err.Error())
		}
		s := sha256.Sum256(data)
		t.hash = hex.EncodeToString(s[:])
	})
	return t.hash
}
