package tokenizer

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fuzzText is encoded by both loads of a round trip.
const fuzzText = "Hello, world! 12345 <|endoftext|> the the the\n\tüñï 😀"

// fuzzTokenizerJSON is a small trained tokenizer.json.
func fuzzTokenizerJSON(t testing.TB) []byte {
	docs := slices.Values([]string{"the cat sat on the mat", "hello hello world", "12 345 6789"})
	tok, err := Train(context.Background(), docs, TrainOptions{VocabSize: 270, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tok.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fuzzRanks is a tiktoken rank file: the 256 bytes, then "th", "the".
func fuzzRanks() []byte {
	var b bytes.Buffer
	for c := range 256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(c)}), c)
	}
	fmt.Fprintf(&b, "%s 256\n%s 257\n", base64.StdEncoding.EncodeToString([]byte("th")), base64.StdEncoding.EncodeToString([]byte("the")))
	return b.Bytes()
}

// checkLoaded asserts what every loaded tokenizer must satisfy: an error
// names the file; a tokenizer that loads is written as tokenizer.json and
// loads back to the same canonical bytes, hash and encoding, and decodes
// what it encodes to text it encodes the same way.
func checkLoaded(t *testing.T, path string, tok *Tokenizer, err error) {
	if err != nil {
		if !strings.HasPrefix(err.Error(), "tokenizer "+path+": ") {
			t.Fatalf("error %q does not name %s", err, path)
		}
		return
	}
	first, err := tok.Marshal()
	if err != nil {
		return // an added token that is not UTF-8: Save refuses it, naming it
	}
	again := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(again, first, 0o644); err != nil {
		t.Fatal(err)
	}
	tok2, err := Load(again)
	if err != nil {
		t.Fatalf("our own tokenizer.json does not load: %v", err)
	}
	second, err := tok2.Marshal()
	if err != nil || !bytes.Equal(first, second) || tok.Hash() != tok2.Hash() {
		t.Fatalf("round trip changed the tokenizer (%v)", err)
	}
	ids := tok.EncodeSpecial(fuzzText)
	if !slices.Equal(ids, tok2.EncodeSpecial(fuzzText)) {
		t.Fatalf("round trip changed the encoding: %v vs %v", ids, tok2.EncodeSpecial(fuzzText))
	}
	for _, id := range ids {
		if !tok.ValidID(id) {
			t.Fatalf("encoding gave id %d, not valid (size %d)", id, tok.VocabSize())
		}
	}
}

// FuzzLoadJSON: any tokenizer.json loads or is refused naming the file,
// without panicking; one that loads survives Save → Load.
func FuzzLoadJSON(f *testing.F) {
	good := fuzzTokenizerJSON(f)
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"normalizer": null`), []byte(`"normalizer": {"type": "NFC"}`), 1))
	f.Add(bytes.Replace(good, []byte(`"use_regex": true`), []byte(`"use_regex": false`), 1))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":["a a"]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"added_tokens":[{"id":-1,"content":"x"}],"model":{"type":"BPE"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := Load(path)
		checkLoaded(t, path, tok, err)
	})
}

// FuzzLoadTiktoken: any tiktoken rank file, with or without the
// encoding's JSON beside it, loads or is refused naming the file; one that
// loads survives Save → Load.
func FuzzLoadTiktoken(f *testing.F) {
	ranks := fuzzRanks()
	f.Add(ranks, []byte(nil))
	f.Add(ranks, []byte(`{"pat_str": "\\s+|\\S+", "special_tokens": {"<|endoftext|>": 258}}`))
	f.Add(ranks, []byte(`{"pat_str": "x", "special_tokens": {"<|endoftext|>": 3}}`))
	f.Add(append(ranks, "AAAA 1\n"...), []byte(nil))
	f.Add([]byte("AA== 16777216\n"), []byte(nil))
	f.Add([]byte("not base64 7\n"), []byte(nil))
	f.Fuzz(func(t *testing.T, rankFile, encJSON []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "enc.tiktoken")
		if err := os.WriteFile(path, rankFile, 0o644); err != nil {
			t.Fatal(err)
		}
		if encJSON != nil {
			if err := os.WriteFile(filepath.Join(dir, "enc.json"), encJSON, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		tok, err := Load(path)
		checkLoaded(t, path, tok, err)
	})
}

// FuzzLoadVocabMerges: any GPT-2 vocab.json + merges.txt pair loads or is
// refused naming the file; one that loads survives Save → Load.
func FuzzLoadVocabMerges(f *testing.F) {
	var vocab bytes.Buffer
	vocab.WriteString("{")
	for c := range 256 {
		fmt.Fprintf(&vocab, "%q: %d, ", string(byteToRune[c]), c)
	}
	vocab.WriteString(`"th": 256, "the": 257, "<|endoftext|>": 258}`)
	f.Add(vocab.Bytes(), []byte("#version: 0.2\nt h\nth e\n"))
	f.Add(vocab.Bytes(), []byte("t h x\n"))
	f.Add([]byte(`{"a": 67108864}`), []byte(""))
	f.Fuzz(func(t *testing.T, vocab, merges []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "vocab.json")
		if err := os.WriteFile(path, vocab, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "merges.txt"), merges, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := Load(path)
		checkLoaded(t, path, tok, err)
	})
}

// TestLoadFuzzSeedsAndBounds: the fuzz targets' good seeds load (so the
// targets reach the round trip), and files whose ids or ranks run far past
// the tokens they hold are refused naming the id, at once (before: the
// 14-byte rank file "AA== 16777216" cost 400 MB and 4 s, a vocab.json id
// of 1<<26 or an added token id of 1<<26 cost about 1.5 GB).
func TestLoadFuzzSeedsAndBounds(t *testing.T) {
	write := func(name string, data []byte) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, data := range map[string][]byte{"tokenizer.json": fuzzTokenizerJSON(t), "enc.tiktoken": fuzzRanks()} {
		if _, err := Load(write(name, data)); err != nil {
			t.Errorf("seed %s: %v", name, err)
		}
	}
	for _, c := range []struct{ name, data, want string }{
		{"enc.tiktoken", "AA== 16777216\n", "rank 16777216 for 1 tokens: the ranks are not 0..n-1"},
		{"vocab.json", `{"a": 67108864}`, `vocab "a": id 67108864 out of range for 1 tokens`},
		{"tokenizer.json", `{"added_tokens":[{"id":67108864,"content":"<x>","special":true}],"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`,
			`added token "<x>": id 67108864 out of range for 1 tokens`},
	} {
		p := write(c.name, []byte(c.data))
		if c.name == "vocab.json" {
			if err := os.WriteFile(filepath.Join(filepath.Dir(p), "merges.txt"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s %.30q: %v; want %q naming the file", c.name, c.data, err, c.want)
		}
	}
}
