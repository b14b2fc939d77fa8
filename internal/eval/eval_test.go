package eval

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/testrun"
	"github.com/kestrel-lm/kestrel/internal/train"
)

var (
	tinyOnce sync.Once
	tinyRun  string
	tinyErr  error
)

// tinyModel trains a small byte-level model on Tiny Shakespeare for a few
// dozen steps (once per test binary) and returns a Scorer over its final
// checkpoint and the run directory.
func tinyModel(t *testing.T) (*Scorer, string) {
	t.Helper()
	tinyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "eval-tiny-")
		if err != nil {
			tinyErr = err
			return
		}
		tinyRun = filepath.Join(dir, "run")
		cfg := config.Default()
		cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = 256, 32, 1, 2, 2
		cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
		cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery, cfg.Train.PeakGFLOPS = 40, 8, 0, 1, 0, 10
		cfg.Optim.LR, cfg.Optim.Warmup = 1e-2, 2
		cfg.Checkpoint.Every = 0
		tinyErr = testrun.TrainErr(cfg, "", tinyRun, nil)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	m, _, err := train.LoadModel(tinyRun, false, testrun.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	return &Scorer{Model: m, Codec: generate.BytesCodec(), Batch: 3}, tinyRun
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tinyRun != "" {
		os.RemoveAll(filepath.Dir(tinyRun))
	}
	os.Exit(code)
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// modelNLL is the model's own loss (mean CE × tokens) on inputs → targets.
func modelNLL(t *testing.T, m *model.Model, inputs, targets []int32) float64 {
	t.Helper()
	st, err := m.Forward(&model.Batch{B: 1, T: len(inputs), Inputs: inputs, Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	return st.Loss * float64(st.Tokens)
}

func bytesOf(s string) []int32 {
	out := make([]int32, len(s))
	for i := range len(s) {
		out[i] = int32(s[i])
	}
	return out
}

// TestScoreMatchesModelLoss: the summed log-probability of a continuation
// that fills a whole window is −loss × tokens of the model's own forward on
// the same tokens; a longer context keeps only its rightmost tokens; a
// partial continuation is scored on its own tokens only; batching and
// padding do not change any score.
func TestScoreMatchesModelLoss(t *testing.T) {
	s, _ := tinyModel(t)
	T := s.Model.Cfg.SeqLen
	text := "First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak."
	full := bytesOf(text[:T+1])

	// context = 1 byte, continuation = T bytes: every position is scored.
	sc, err := s.Score(text[:1], text[1:T+1])
	if err != nil {
		t.Fatal(err)
	}
	want := -modelNLL(t, s.Model, full[:T], full[1:])
	if sc.Tokens != T || sc.Bytes != T || !near(sc.LogProb, want, 1e-5) {
		t.Fatalf("full window: got %+v, want logprob %v over %d tokens", sc, want, T)
	}

	// a long context is cut on the left: the same as scoring the rightmost T+1 bytes.
	long := text[:50]
	sc, err = s.Score(long[:40], long[40:])
	if err != nil {
		t.Fatal(err)
	}
	w := bytesOf(long[len(long)-(T+1):])
	tg := append([]int32(nil), w[1:]...)
	for i := range T - 10 {
		tg[i] = -1
	}
	want = -modelNLL(t, s.Model, w[:T], tg)
	if sc.Tokens != 10 || !near(sc.LogProb, want, 1e-5) {
		t.Fatalf("truncated context: got %+v, want logprob %v over 10 tokens", sc, want)
	}

	// batched with padding = one at a time
	reqs := []Request{{"ROMEO:", " hello there"}, {"", " x"}, {text[:20], text[20:25]}, {"To be or not", " to be"}, {text[:60], text[60:]}}
	all, err := s.ScoreAll(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		one, err := s.Score(r.Context, r.Continuation)
		if err != nil {
			t.Fatal(err)
		}
		if !near(all[i].LogProb, one.LogProb, 1e-5) || all[i].Tokens != one.Tokens || one.LogProb >= 0 {
			t.Errorf("request %d: batched %+v, alone %+v", i, all[i], one)
		}
	}
	if _, err := s.Score("abc", ""); err == nil {
		t.Error("empty continuation accepted")
	}
}

// TestPick: acc by summed log-probability, acc_norm by log-probability per
// byte, ties to the first choice.
func TestPick(t *testing.T) {
	for _, c := range []struct {
		name         string
		scores       []Score
		acc, accNorm int
	}{
		{"same", []Score{{LogProb: -5, Bytes: 5}, {LogProb: -2, Bytes: 5}}, 1, 1},
		{"long choice wins by bytes", []Score{{LogProb: -4, Bytes: 2}, {LogProb: -6, Bytes: 12}}, 0, 1},
		{"tie", []Score{{LogProb: -3, Bytes: 3}, {LogProb: -3, Bytes: 3}, {LogProb: -9, Bytes: 3}}, 0, 0},
	} {
		ch := Pick(c.scores)
		if ch.Acc != c.acc || ch.AccNorm != c.accNorm {
			t.Errorf("%s: got acc %d acc_norm %d, want %d %d", c.name, ch.Acc, ch.AccNorm, c.acc, c.accNorm)
		}
	}
}

// TestChooseObvious: items where one choice is ordinary English and the
// others are bytes the model never saw: the trained model picks the
// English one by acc and acc_norm; Tally counts it and its standard errors.
func TestChooseObvious(t *testing.T) {
	s, _ := tinyModel(t)
	items := []Item{
		{Context: "ROMEO:\nI will", Choices: []string{" \x01\x02\x03\x04\x05", " see thee"}, Label: 1},
		{Context: "KING HENRY:\nWhat says", Choices: []string{" the king", " \xf0\xf1\xf2\xf3\xf4", " \x7f\x7f\x7f\x7f\x7f"}, Label: 0},
		{Context: "First Citizen:\nWe are", Choices: []string{" ~\x00~\x00~", " {{{{{", " all the"}, Label: 2},
		{Context: "To be or not to be", Choices: []string{", that is", "\x10\x11\x12\x13\x14\x15"}, Label: 0},
	}
	ch, err := s.Choose(items)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if ch[i].Acc != it.Label || ch[i].AccNorm != it.Label {
			t.Errorf("item %d: chose %d/%d (logprobs %v), want %d", i, ch[i].Acc, ch[i].AccNorm, ch[i].LogProbs, it.Label)
		}
	}
	r := Tally("obvious", items, ch)
	if r.N != 4 || r.Acc != 1 || r.AccNorm != 1 || r.AccStderr != 0 {
		t.Errorf("tally %+v", r)
	}
	// one wrong of four: p = 0.75, stderr = sqrt(0.75·0.25/3)
	ch[0].Acc = 0
	r = Tally("obvious", items, ch)
	if r.Acc != 0.75 || !near(r.AccStderr, math.Sqrt(0.75*0.25/3), 1e-12) || r.AccNorm != 1 {
		t.Errorf("tally with one wrong %+v", r)
	}
}

// TestStderr against hand-computed values.
func TestStderr(t *testing.T) {
	for _, c := range []struct {
		p    float64
		n    int
		want float64
	}{{0.25, 5, 0.21650635094610965}, {0.6, 10, 0.1632993161855452}, {0.5, 1, 0}, {1, 100, 0}} {
		if got := Stderr(c.p, c.n); !near(got, c.want, 1e-12) {
			t.Errorf("Stderr(%v, %d) = %v, want %v", c.p, c.n, got, c.want)
		}
	}
}

// TestTextNLL: bits per byte equals the sum of the model's own losses over
// the non-overlapping windows of "\n"+text, divided by ln 2 × bytes; with a
// window limit it covers the bytes of those windows only.
func TestTextNLL(t *testing.T) {
	s, _ := tinyModel(t)
	T := s.Model.Cfg.SeqLen
	text := strings.Repeat("Now is the winter of our discontent. ", 3) // 111 bytes: 4 windows (32+32+32+16)
	all := append([]int32{'\n'}, bytesOf(text)...)
	var nats float64
	var windows []float64
	for lo := 0; lo+1 < len(all); lo += T {
		hi := min(lo+T+1, len(all))
		n := modelNLL(t, s.Model, all[lo:hi-1], all[lo+1:hi])
		nats += n
		windows = append(windows, n)
	}
	got, err := s.TextNLL(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tokens != len(text) || got.Bytes != len(text) || !near(got.Nats, nats, 1e-5) {
		t.Fatalf("TextNLL = %+v, want %v nats over %d tokens", got, nats, len(text))
	}
	if want := nats / (math.Ln2 * float64(len(text))); !near(got.BitsPerByte(), want, 1e-5) {
		t.Fatalf("bpb %v, want %v", got.BitsPerByte(), want)
	}
	got, err = s.TextNLL(text, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tokens != 2*T || got.Bytes != 2*T-1+1 || !near(got.Nats, windows[0]+windows[1], 1e-5) {
		t.Fatalf("2 windows: %+v, want %v nats over %d tokens", got, windows[0]+windows[1], 2*T)
	}
}

// TestReadShipped: the readers parse the shipped HellaSwag and PIQA files:
// the first items' fields, the item counts, --limit.
func TestReadShipped(t *testing.T) {
	hp, err := datadir.Path("hellaswag/hellaswag_val_preprocessed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ReadHellaSwag(hp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 10042 || hs[0].Context != "Roof shingle removal: A man is sitting on a roof. he" || hs[0].Label != 3 ||
		len(hs[0].Choices) != 4 || hs[0].Choices[3] != " starts pulling up roofing on a roof." {
		t.Fatalf("hellaswag: %d items, first %+v", len(hs), hs[0])
	}
	if hs, _ := ReadHellaSwag(hp, 7); len(hs) != 7 || hs[1].Label != 3 {
		t.Fatalf("hellaswag limit 7: %d items", len(hs))
	}
	pp, _ := datadir.Path("piqa/valid.jsonl")
	lp, _ := datadir.Path("piqa/valid-labels.lst")
	pq, err := ReadPIQA(pp, lp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pq) != 1838 || pq[0].Context != "Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:" || pq[0].Label != 0 ||
		!strings.HasPrefix(pq[0].Choices[0], " Provide the guinea pig with a cage full of a few inches of bedding made of ripped paper") {
		t.Fatalf("piqa: %d items, first %+v", len(pq), pq[0])
	}
	if pq, _ := ReadPIQA(pp, lp, 3); len(pq) != 3 {
		t.Fatalf("piqa limit 3: %d items", len(pq))
	}
}

// TestReadMalformed: a malformed line is refused naming file:line.
func TestReadMalformed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"ctx": "a", "label": 0, "endings": ["b", "c"]}` + "\n"
	piqa := `{"goal": "g", "sol1": "a", "sol2": "b"}` + "\n"
	for _, c := range []struct {
		name string
		read func() error
		want string
	}{
		{"hellaswag json", func() error {
			_, err := ReadHellaSwag(write("h1.jsonl", good+"{not json\n"), 0)
			return err
		}, "h1.jsonl:2"},
		{"hellaswag label", func() error {
			_, err := ReadHellaSwag(write("h2.jsonl", good+"\n"+`{"ctx": "a", "label": 2, "endings": ["b", "c"]}`+"\n"), 0)
			return err
		}, "h2.jsonl:3: field label"},
		{"hellaswag no ctx", func() error {
			_, err := ReadHellaSwag(write("h3.jsonl", `{"label": 0, "endings": ["b", "c"]}`+"\n"), 0)
			return err
		}, "h3.jsonl:1: field ctx"},
		{"piqa label", func() error {
			_, err := ReadPIQA(write("p1.jsonl", piqa+piqa), write("l1.lst", "0\n2\n"), 0)
			return err
		}, "l1.lst:2"},
		{"piqa field", func() error {
			_, err := ReadPIQA(write("p2.jsonl", piqa+`{"goal": "g", "sol1": "a"}`+"\n"), write("l2.lst", "0\n1\n"), 0)
			return err
		}, "p2.jsonl:2"},
		{"piqa count", func() error {
			_, err := ReadPIQA(write("p3.jsonl", piqa), write("l3.lst", "0\n1\n"), 0)
			return err
		}, "has 1 items but"},
	} {
		err := c.read()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestRunBytesRun: Run on a byte-level run evaluates every task through the
// checkpoint resolution and its result has the JSON fields; unknown tasks are refused.
func TestRunBytesRun(t *testing.T) {
	_, run := tinyModel(t)
	res, err := Run(Options{Run: run, Tasks: []string{"hellaswag", "piqa", "bpb"}, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.MC) != 2 || res.MC[0].N != 5 || res.MC[1].N != 5 || len(res.BPB) != 1 || res.BPB[0].Tokens != 5*32 || res.BPB[0].BPB <= 0 {
		t.Fatalf("result %+v", res)
	}
	// The table kestrel eval prints of it: cmd/kestrel/internal/show.
	if js, err := json.Marshal(res); err != nil || !strings.Contains(string(js), `"acc_norm_stderr"`) {
		t.Fatalf("json %s %v", js, err)
	}
	if _, err := Run(Options{Run: run, Tasks: []string{"gsm9k"}}); err == nil || !strings.Contains(err.Error(), "gsm9k") {
		t.Fatalf("unknown task: %v", err)
	}
	if _, err := Run(Options{Run: run, Checkpoint: "step-7", Tasks: []string{"bpb"}}); err == nil {
		t.Fatal("missing checkpoint step-7 accepted")
	}
}

// TestSeparateEncoding: context and continuation are encoded separately and
// the ids concatenated (the harness's way), not the joined text re-encoded:
// with a codec that merges "e " into one id, "the" + " end" scores the ids
// t h e ␠ e n d, where the joined text would give t h [e␠] e n d.
func TestSeparateEncoding(t *testing.T) {
	s, _ := tinyModel(t)
	const merged = 200 // the id of "e "
	enc := func(str string) ([]int32, error) {
		var ids []int32
		for i := 0; i < len(str); i++ {
			if i+1 < len(str) && str[i] == 'e' && str[i+1] == ' ' {
				ids = append(ids, merged)
				i++
				continue
			}
			ids = append(ids, int32(str[i]))
		}
		return ids, nil
	}
	s.Codec.Encode = enc
	sc, err := s.Score("the", " end")
	if err != nil {
		t.Fatal(err)
	}
	sep := bytesOf("the end")
	tg := append([]int32{-1, -1}, sep[3:]...)
	want := -modelNLL(t, s.Model, sep[:6], tg)
	joined, _ := enc("the end")
	jtg := append([]int32{-1}, joined[2:]...)
	jwant := -modelNLL(t, s.Model, joined[:len(joined)-1], jtg)
	if sc.Tokens != 4 || !near(sc.LogProb, want, 1e-5) || near(sc.LogProb, jwant, 1e-3) {
		t.Fatalf("got %+v, want logprob %v over 4 tokens (the joined encoding gives %v)", sc, want, jwant)
	}
}

// TestAccNormBytes: acc_norm divides by the choice's bytes without its
// leading space (the harness's len(choice)). Among candidate pairs, one
// where counting the space would flip the choice is found and Choose must
// pick as the harness does.
func TestAccNormBytes(t *testing.T) {
	s, _ := tinyModel(t)
	cands := []string{" a", " I", " to", " xq", " the", " zzz", " thee", " my lord", " qxjz", " and so", " Z", " e"}
	ctx := "KING RICHARD:\nGo"
	lp := map[string]float64{}
	for _, c := range cands {
		sc, err := s.Score(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		lp[c] = sc.LogProb
	}
	for _, a := range cands {
		for _, b := range cands {
			harness := lp[b]/float64(len(b)-1) > lp[a]/float64(len(a)-1)
			withSpace := lp[b]/float64(len(b)) > lp[a]/float64(len(a))
			if harness == withSpace {
				continue
			}
			ch, err := s.Choose([]Item{{Context: ctx, Choices: []string{a, b}}})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 0, true: 1}[harness]; ch[0].AccNorm != want {
				t.Fatalf("choices %q (%v) and %q (%v): acc_norm chose %d, the harness chooses %d", a, lp[a], b, lp[b], ch[0].AccNorm, want)
			}
			return
		}
	}
	t.Fatal("no candidate pair where the leading space changes acc_norm")
}
