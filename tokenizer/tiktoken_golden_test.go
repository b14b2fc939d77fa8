package tokenizer

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

var updateTiktokenGolden = flag.Bool("tiktoken-golden", false, "regenerate testdata/tiktoken_golden.json with node tools/tiktokenref/encode.mjs")

// tiktokenGoldenPath holds digests of the ids that tools/tiktokenref
// (pat_str as a JavaScript RegExp, rank-based BPE: the semantics of
// js-tiktoken, the reference named in ../shared/data/tiktoken/SOURCE.txt)
// gives for the shipped texts.
const tiktokenGoldenPath = "testdata/tiktoken_golden.json"

// goldenBlock is the number of shipped texts per digest.
const goldenBlock = 16

type tikGolden struct {
	Texts     int                   `json:"texts"`      // shipped texts (lines) digested
	Docs      int                   `json:"docs"`       // multi-line documents digested
	TextsHash string                `json:"texts_hash"` // of the texts themselves
	Block     int                   `json:"block"`
	Encodings map[string]tikDigests `json:"encodings"`
}

type tikDigests struct {
	Lines []string `json:"lines"` // one digest per Block texts
	Docs  []string `json:"docs"`  // one digest per document
}

// goldenDocs joins consecutive shipped texts (lines keep their newline)
// into documents of about 32 KiB: multi-line text, where the patterns'
// newline alternatives matter.
func goldenDocs(texts []string) []string {
	var docs []string
	var b strings.Builder
	for _, s := range texts {
		b.WriteString(s)
		if b.Len() >= 32<<10 {
			docs = append(docs, b.String())
			b.Reset()
		}
	}
	if b.Len() > 0 {
		docs = append(docs, b.String())
	}
	return docs
}

// validTexts are the shipped texts that JSON carries unchanged (valid
// UTF-8), as node reads them.
func validTexts(t testing.TB) []string {
	var out []string
	for _, s := range shipped(t) {
		if utf8.ValidString(s) {
			out = append(out, s)
		}
	}
	return out
}

func digestIDs(list ...[]int32) string {
	h := sha256.New()
	var b [4]byte
	for _, ids := range list {
		binary.LittleEndian.PutUint32(b[:], uint32(len(ids)))
		h.Write(b[:])
		for _, id := range ids {
			binary.LittleEndian.PutUint32(b[:], uint32(id))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func textsHash(texts []string) string {
	h := sha256.New()
	for _, s := range texts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// digests are the golden digests of the ids of the texts and documents.
func digests(lines, docs [][]int32) tikDigests {
	var d tikDigests
	for i := 0; i < len(lines); i += goldenBlock {
		d.Lines = append(d.Lines, digestIDs(lines[i:min(i+goldenBlock, len(lines))]...))
	}
	for _, ids := range docs {
		d.Docs = append(d.Docs, digestIDs(ids))
	}
	return d
}

var tikToks sync.Map // name → *Tokenizer

func tiktokenTok(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if v, ok := tikToks.Load(name); ok {
		return v.(*Tokenizer)
	}
	tok, err := Load(mustPath(t, "tiktoken/"+name+".tiktoken"))
	if err != nil {
		t.Fatal(err)
	}
	tikToks.Store(name, tok)
	return tok
}

// nodeEncode runs the reference encoder on texts.
func nodeEncode(t *testing.T, name string, texts []string) [][]int32 {
	dir := t.TempDir()
	in := filepath.Join(dir, "texts.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, s := range texts {
		b, _ := json.Marshal(s)
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command("node", "../tools/tiktokenref/encode.mjs", mustPath(t, "tiktoken/"+name+".tiktoken"), mustPath(t, "tiktoken/"+name+".json"))
	cmd.Stdin, _ = os.Open(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var ids [][]int32
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v []int32
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v)
	}
	if len(ids) != len(texts) {
		t.Fatalf("node gave %d results for %d texts", len(ids), len(texts))
	}
	return ids
}

// TestTiktokenGolden compares kestrel's cl100k_base and o200k_base ids on
// every shipped text, and on multi-line documents made of them, with the
// committed digests of tools/tiktokenref's ids (regenerate with
// -tiktoken-golden; needs node). Unlike tiktoken-go, whose regexp2 engine
// cuts " \n \n" short (see TestRegexp2Llama3Deviation), the reference
// follows the regex, so whole documents are compared too.
func TestTiktokenGolden(t *testing.T) {
	texts := validTexts(t)
	docs := goldenDocs(texts)
	names := []string{"cl100k_base", "o200k_base"}
	if *updateTiktokenGolden {
		g := tikGolden{Texts: len(texts), Docs: len(docs), TextsHash: textsHash(texts), Block: goldenBlock, Encodings: map[string]tikDigests{}}
		for _, name := range names {
			all := nodeEncode(t, name, append(append([]string(nil), texts...), docs...))
			g.Encodings[name] = digests(all[:len(texts)], all[len(texts):])
		}
		b, _ := json.MarshalIndent(g, "", " ")
		if err := os.WriteFile(tiktokenGoldenPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(tiktokenGoldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var g tikGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", tiktokenGoldenPath, err)
	}
	if g.Texts != len(texts) || g.TextsHash != textsHash(texts) || g.Block != goldenBlock {
		t.Skipf("shipped data changed since %s was made (%d texts, now %d): regenerate with -tiktoken-golden (needs node)", tiktokenGoldenPath, g.Texts, len(texts))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tok := tiktokenTok(t, name)
			want, ok := g.Encodings[name]
			if !ok {
				t.Fatalf("%s: no %s", tiktokenGoldenPath, name)
			}
			// 1 block and 1 document in 8 unless -long (all of them)
			step := 8
			if *long {
				step = 1
			}
			sameLines, nLines, sameDocs, nDocs, bad := 0, 0, 0, 0, 0
			for i := 0; i*goldenBlock < len(texts); i += step {
				blk := texts[i*goldenBlock : min((i+1)*goldenBlock, len(texts))]
				ids := make([][]int32, len(blk))
				for k, s := range blk {
					ids[k] = tok.Encode(s)
				}
				nLines += len(blk)
				if i < len(want.Lines) && digestIDs(ids...) == want.Lines[i] {
					sameLines += len(blk)
				} else if bad++; bad <= 5 {
					t.Errorf("texts %d..%d differ from the reference, e.g. %q", i*goldenBlock, i*goldenBlock+len(blk)-1, trunc(blk[0]))
				}
			}
			for i := 0; i < len(docs); i += step {
				nDocs++
				if i < len(want.Docs) && digestIDs(tok.Encode(docs[i])) == want.Docs[i] {
					sameDocs++
				} else if bad++; bad <= 10 {
					t.Errorf("document %d differs from the reference", i)
				}
			}
			t.Logf("%s: %d of %d shipped texts and %d of %d multi-line documents identical to tools/tiktokenref (js-tiktoken semantics)", name, sameLines, nLines, sameDocs, nDocs)
		})
	}
}
