package prepare

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// paragraphs returns n WikiText-2 articles' worth of natural text pieces
// of at least minBytes each.
func paragraphs(t *testing.T, n, minBytes int) []string {
	t.Helper()
	p, err := datadir.Path("wikitext-2/valid.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && len(out) < n {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "=") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if cur.Len() >= minBytes {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if len(out) < n {
		t.Fatalf("only %d paragraphs", len(out))
	}
	return out
}

func gsm8kQuestion(t *testing.T, line int) string {
	t.Helper()
	p, err := datadir.Path("gsm8k/test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Question string }
	if err := json.Unmarshal([]byte(strings.Split(string(b), "\n")[line-1]), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Question
}

// editWords replaces frac of the words of s with other words.
func editWords(s string, frac float64, rng *rand.Rand) string {
	w := strings.Fields(s)
	for i := range w {
		if rng.Float64() < frac {
			w[i] = fmt.Sprintf("w%d", rng.IntN(1000))
		}
	}
	return strings.Join(w, " ")
}

type corpusFixture struct {
	dir      string
	docs     []string // texts written, in order (line i+1)
	exactDup int      // line numbers
	nearDup  int
	planted  int
	badLine  int
}

func writeFixture(t *testing.T) corpusFixture {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	paras := paragraphs(t, 30, 1500)
	fx := corpusFixture{dir: dir}
	var lines []string
	add := func(text string) int {
		b, _ := json.Marshal(map[string]string{"text": text, "url": fmt.Sprintf("http://example.com/%d", len(lines))})
		lines = append(lines, string(b))
		fx.docs = append(fx.docs, text)
		return len(lines)
	}
	for _, p := range paras[:20] {
		add(p)
	}
	fx.exactDup = add("  " + strings.ToUpper(paras[3][:1]) + paras[3][1:] + "\n") // same normalised text as line 4
	fx.nearDup = add(editWords(paras[5], 0.01, rng))
	q := gsm8kQuestion(t, 1)
	fx.planted = add(paras[21] + "\nA reader asked us: " + q + " We will answer next week.\n" + paras[22])
	lines = append(lines, `{"text": "truncated json`)
	fx.docs = append(fx.docs, "")
	fx.badLine = len(lines)
	for _, p := range paras[23:26] {
		add(p)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

func testConfig(fx corpusFixture) Config {
	cfg := DefaultConfig()
	cfg.Workers = 2
	cfg.Sources = []Source{
		{Name: "web", Inputs: []string{filepath.Join(fx.dir, "*.jsonl")}, Format: "jsonl", Filter: "none", MetaFields: []string{"url"}},
		{Name: "web", Inputs: []string{"${KESTREL_DATA}/dolma-testdata/cc_en_head/*.jsonl"}, Format: "jsonl", Filter: "web"},
		{Name: "math", Inputs: []string{"${KESTREL_DATA}/gsm8k/train.jsonl"}, Format: "jsonl", TextField: "question,answer", Filter: "math", MaxDocs: 300},
	}
	idx := decontam.DefaultConfig()
	idx.EvalSets = idx.EvalSets[:1] // gsm8k only: keeps the test fast
	cfg.Decontam.Index = idx
	return cfg
}

func readZstdJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []T
	dec := json.NewDecoder(zr)
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

func TestPrepareEndToEnd(t *testing.T) {
	fx := writeFixture(t)
	cfg := testConfig(fx)
	out := filepath.Join(t.TempDir(), "ds")
	var heard []*datareport.Report
	rep, err := Run(context.Background(), cfg, RunOptions{Out: out, Summary: func(r *datareport.Report) { heard = append(heard, r) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(heard) != 1 || heard[0] != rep {
		t.Errorf("the summary heard %d reports, want the one returned", len(heard))
	}

	// Rejects, by stage, with reasons.
	rejects := map[string]RejectRecord{}
	for _, f := range rep.RejectFiles {
		for _, r := range readZstdJSONL[RejectRecord](t, filepath.Join(out, f.Path)) {
			if r.Stage == "" || r.Rule == "" || r.ID == "" || r.Source == "" {
				t.Errorf("incomplete reject %+v", r)
			}
			rejects[r.ID] = r
		}
	}
	id := func(line int) string { return fmt.Sprintf("web:web.jsonl:%d", line) }
	// dedup keeps the smallest id of a near-duplicate cluster (byte order).
	nearKept, nearDropped := id(6), id(fx.nearDup)
	if nearDropped < nearKept {
		nearKept, nearDropped = nearDropped, nearKept
	}
	wantRej := map[string]string{
		id(fx.exactDup): datareport.StageExact + "/exact_duplicate",
		nearDropped:     datareport.StageNear + "/minhash",
		id(fx.planted):  datareport.StageDecontam + "/gsm8k",
	}
	for docID, want := range wantRej {
		r, ok := rejects[docID]
		if !ok {
			t.Errorf("%s not rejected (want %s)", docID, want)
			continue
		}
		if got := r.Stage + "/" + r.Rule; got != want {
			t.Errorf("%s rejected by %s, want %s (%s)", docID, got, want, r.Detail)
		}
	}
	if r := rejects[id(fx.exactDup)]; !strings.Contains(r.Detail, id(4)) {
		t.Errorf("exact dup detail %q does not name the first copy %s", r.Detail, id(4))
	}
	if r := rejects[nearDropped]; !strings.HasSuffix(r.Detail, nearKept) {
		t.Errorf("near dup detail %q does not name the kept copy %s", r.Detail, nearKept)
	}
	if r := rejects[id(fx.planted)]; !strings.Contains(r.Detail, "test.jsonl:1") {
		t.Errorf("decontam detail %q does not name gsm8k test item 1", r.Detail)
	}
	cleanRejects := 0
	for k, n := range rep.Rejects {
		if strings.HasPrefix(k, datareport.StageClean+"/") {
			cleanRejects += int(n)
		}
	}
	if cleanRejects == 0 {
		t.Errorf("no clean rejects on cc_en_head: %v", rep.Rejects)
	}

	// Kept documents: everything else from the fixture, with ids and meta.
	var kept []document.Doc
	for _, f := range rep.DocShards {
		kept = append(kept, readZstdJSONL[document.Doc](t, filepath.Join(out, f.Path))...)
	}
	keptIDs := map[string]document.Doc{}
	for _, d := range kept {
		if _, dup := keptIDs[d.ID]; dup {
			t.Errorf("id %s kept twice", d.ID)
		}
		keptIDs[d.ID] = d
		if _, rej := rejects[d.ID]; rej {
			t.Errorf("%s both kept and rejected", d.ID)
		}
	}
	for line := 1; line <= len(fx.docs); line++ {
		_, isRej := wantRej[id(line)]
		if isRej || line == fx.badLine {
			continue
		}
		d, ok := keptIDs[id(line)]
		if !ok {
			t.Errorf("fixture line %d not kept (%+v)", line, rejects[id(line)])
			continue
		}
		if d.Text != fx.docs[line-1] || d.Meta["url"] == nil {
			t.Errorf("line %d: text or meta changed", line)
		}
	}
	if int64(len(kept)) != rep.Kept.Docs {
		t.Errorf("kept %d docs, report says %d", len(kept), rep.Kept.Docs)
	}

	// datareport.Report contents.
	if rep.Problems.Counts["bad_json"] != 1 || len(rep.Problems.List) != 1 || !strings.Contains(rep.Problems.List[0], fmt.Sprintf("web.jsonl:line %d: bad_json", fx.badLine)) {
		t.Errorf("problems %+v", rep.Problems)
	}
	if rep.NearDupRate <= 0 || rep.ExactDupRate <= 0 {
		t.Errorf("dup rates exact %v near %v", rep.ExactDupRate, rep.NearDupRate)
	}
	if len(rep.Hotspots) == 0 || rep.Hotspots[0].Size != 2 || rep.Hotspots[0].KeptID != nearKept || rep.Hotspots[0].Sample == "" {
		t.Errorf("hotspots %+v", rep.Hotspots)
	}
	if rep.TrainValOverlap["gsm8k"] <= 0 || rep.Overlap["gsm8k"].PerSource["web"] != 1 {
		t.Errorf("overlap %+v %+v", rep.TrainValOverlap, rep.Overlap["gsm8k"])
	}
	if rep.BytesPerDoc.N != len(kept) || rep.BytesPerDoc.P50 <= 0 || rep.BytesPerDoc.Max < rep.BytesPerDoc.P90 {
		t.Errorf("bytes per doc %+v", rep.BytesPerDoc)
	}
	var web *datareport.SourceReport
	for _, s := range rep.Sources {
		if s.Name == "web" {
			web = s
		}
	}
	if web == nil || web.Files != 3 || web.Stages[datareport.StageRead].In.Docs != int64(len(fx.docs)-1+20) {
		t.Errorf("web source report %+v", web)
	}
	if _, ok := rep.TrainValOverlap["gsm8k"]; !ok { // the summary's train_val_overlap (show.PrepareSummary)
		t.Errorf("report lacks the train_val_overlap of gsm8k: %v", rep.TrainValOverlap)
	}
	onDisk, err := datareport.Load(out)
	if err != nil || !onDisk.Complete || onDisk.Fingerprint != rep.Fingerprint {
		t.Fatalf("report.json: %v %+v", err, onDisk)
	}

	// Same config and inputs: up to date, nothing rebuilt.
	again, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil || !again.UpToDate {
		t.Errorf("second run: up_to_date=%v err=%v", again != nil && again.UpToDate, err)
	}
	if ok, err := UpToDate(cfg, out, false); !ok || err != nil {
		t.Errorf("UpToDate = %v, %v", ok, err)
	}
	// A changed input is not up to date.
	os.WriteFile(filepath.Join(fx.dir, "web.jsonl"), []byte(`{"text":"changed"}`+"\n"), 0o644)
	if ok, _ := UpToDate(cfg, out, false); ok {
		t.Error("UpToDate after an input changed")
	}
	third, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil || third.UpToDate {
		t.Errorf("changed input: up_to_date=%v err=%v", third != nil && third.UpToDate, err)
	}
	assertNoTemp(t, filepath.Dir(out))
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary directory %s left behind", e.Name())
		}
	}
}

// A run that fails half-way (malformed input in strict mode, an error after
// N documents, or cancellation) leaves neither a dataset nor temp files,
// and an existing dataset stays as it was.
func TestPrepareFailureLeavesNothing(t *testing.T) {
	fx := writeFixture(t)
	cfg := testConfig(fx)
	cfg.Decontam.Enabled = false
	parent := t.TempDir()
	out := filepath.Join(parent, "ds")

	_, err := Run(context.Background(), cfg, RunOptions{Out: out, Strict: true})
	if err == nil || !strings.Contains(err.Error(), "web.jsonl") || !strings.Contains(err.Error(), fmt.Sprintf("line %d", fx.badLine)) {
		t.Fatalf("strict: err %v, want one naming web.jsonl line %d", err, fx.badLine)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("strict failure left %s", out)
	}
	assertNoTemp(t, parent)

	if _, err := Run(context.Background(), cfg, RunOptions{Out: out, StopAfter: 10}); err == nil {
		t.Fatal("StopAfter run succeeded")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("failed run left %s", out)
	}
	assertNoTemp(t, parent)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, cfg, RunOptions{Out: out}); err == nil {
		t.Fatal("cancelled run succeeded")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("cancelled run left %s", out)
	}
	assertNoTemp(t, parent)

	// A good dataset survives a later failed rebuild untouched.
	good, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, RunOptions{Out: out, Force: true, StopAfter: 5}); err == nil {
		t.Fatal("forced failing run succeeded")
	}
	still, err := datareport.Load(out)
	if err != nil || still.Fingerprint != good.Fingerprint || still.Kept.Docs != good.Kept.Docs {
		t.Fatalf("existing dataset changed by a failed run: %v", err)
	}
	assertNoTemp(t, parent)
}

func TestPrepareTokenizerStage(t *testing.T) {
	fx := writeFixture(t)
	cfg := testConfig(fx)
	cfg.Decontam.Enabled = false
	cfg.Tokenizer.Mode = "train"
	cfg.Tokenizer.VocabSize = 512
	cfg.Tokenizer.Shards.ValFraction = 0.1
	out := filepath.Join(t.TempDir(), "ds")
	rep, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"manifest.json", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if rep.Tokens == nil || rep.Tokens.TotalTokens <= 0 || rep.Tokens.Tokens["web"] <= 0 || rep.Tokens.Tokens["math"] <= 0 || rep.Tokens.VocabSize != 512 {
		t.Fatalf("tokens %+v", rep.Tokens)
	}
}

func TestConfigErrors(t *testing.T) {
	base := func() Config {
		c := DefaultConfig()
		c.Sources = []Source{{Name: "web", Inputs: []string{"x"}, Format: "jsonl"}}
		return c
	}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no sources", func(c *Config) { c.Sources = nil }, "no sources"},
		{"bad name", func(c *Config) { c.Sources[0].Name = "we b" }, "letters"},
		{"bad format", func(c *Config) { c.Sources[0].Format = "csv" }, "csv"},
		{"bad filter", func(c *Config) { c.Sources[0].Filter = "poetry" }, "poetry"},
		{"bad filter key", func(c *Config) {
			c.Sources[0].Filters = map[string]any{"gopher_quality": map[string]any{"min_wrods": 3}}
		}, "min_wrods"},
		{"bad tokenizer mode", func(c *Config) { c.Tokenizer.Mode = "learn" }, "learn"},
		{"load without path", func(c *Config) { c.Tokenizer.Mode = "load" }, "path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mod(&c)
			err := c.validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want mention of %q", err, tc.want)
			}
		})
	}
	c := base()
	c.Sources[0].Filters = map[string]any{"gopher_quality": map[string]any{"min_words": 7}}
	fc, on, err := c.Sources[0].filterConfig()
	if err != nil || !on || fc.GopherQuality.MinWords != 7 || fc.GopherQuality.MaxWords != 100000 {
		t.Errorf("filter overlay: %v %v %+v", err, on, fc.GopherQuality)
	}
}

func TestPrepareDecontamCut(t *testing.T) {
	fx := writeFixture(t)
	cfg := testConfig(fx)
	cfg.Sources = cfg.Sources[:1]
	cfg.Decontam.Index.Mode = decontam.ModeCut
	cfg.Decontam.Index.Margin = 5
	out := filepath.Join(t.TempDir(), "ds")
	rep, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	q := gsm8kQuestion(t, 1)
	found := false
	for _, f := range rep.DocShards {
		for _, d := range readZstdJSONL[document.Doc](t, filepath.Join(out, f.Path)) {
			if strings.Contains(d.Text, "ducks lay 16 eggs") {
				t.Errorf("%s still holds the GSM8K question", d.ID)
			}
			if d.ID == fmt.Sprintf("web:web.jsonl:%d", fx.planted) {
				found = true
				if d.Meta["decontam_cut"] == nil || len(d.Text) >= len(fx.docs[fx.planted-1])-len(q) {
					t.Errorf("planted doc not cut: meta %v, %d bytes", d.Meta, len(d.Text))
				}
			}
		}
	}
	if !found || rep.DecontamCutDocs != 1 || rep.Overlap["gsm8k"].Docs != 1 {
		t.Errorf("cut doc kept=%v, cut docs %d, overlap %+v", found, rep.DecontamCutDocs, rep.Overlap["gsm8k"])
	}
}

// BenchmarkRun times a whole prepare (web filters, exact + near dedup, no
// decontam, no tokenizer) over a generated 4 MiB corpus; `kestrel bench
// prepare` has the per-stage numbers on larger corpora.
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	files, _, _, err := GenerateBenchCorpus(dir, 4, 1)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, f := range files {
		st, _ := os.Stat(f)
		size += st.Size()
	}
	cfg := DefaultConfig()
	cfg.Decontam.Enabled = false
	cfg.Sources = []Source{{Name: "bench", Inputs: files, Format: "jsonl", Filter: "web"}}
	b.SetBytes(size)
	for i := 0; b.Loop(); i++ {
		if _, err := Run(context.Background(), cfg, RunOptions{Out: filepath.Join(dir, fmt.Sprintf("out%d", i)), Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGenerateBenchCorpus(t *testing.T) {
	dir := t.TempDir()
	files, exact, near, err := GenerateBenchCorpus(dir, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(files[0])
	if err != nil || st.Size() < 1<<20 || exact == 0 || near == 0 {
		t.Fatalf("files %v size %v exact %d near %d err %v", files, st, exact, near, err)
	}
}
