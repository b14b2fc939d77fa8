package eval

import (
	"math"
	"strings"
	"testing"
)

// TestTokenLogProbs: each log-probability equals the model's own per-token
// cross-entropy (Forward with a single target) in the same window; the
// windows restart every seq_len predictions; their sum is TextNLL's; bad
// input is refused.
func TestTokenLogProbs(t *testing.T) {
	s, _ := tinyModel(t)
	T := s.Model.Cfg.SeqLen
	text := strings.Repeat("Once more unto the breach, dear friends. ", 2) // 82 bytes: 3 windows
	ids := append([]int32{'\n'}, bytesOf(text)...)
	lps, err := s.TokenLogProbs(ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(lps) != len(ids)-1 {
		t.Fatalf("%d logprobs for %d tokens", len(lps), len(ids))
	}
	for _, i := range []int{1, 2, T, T + 1, T + 2, 2*T + 1, len(ids) - 1} {
		lo := (i - 1) / T * T // window start
		inputs := ids[lo:i]
		targets := make([]int32, len(inputs))
		for j := range targets {
			targets[j] = -1
		}
		targets[len(targets)-1] = ids[i]
		want := -modelNLL(t, s.Model, inputs, targets)
		if !near(lps[i-1], want, 1e-5) {
			t.Errorf("token %d: logprob %v, want %v (window from %d)", i, lps[i-1], want, lo)
		}
		if lps[i-1] > 0 || math.IsNaN(lps[i-1]) {
			t.Errorf("token %d: logprob %v", i, lps[i-1])
		}
	}
	nll, err := s.TextNLL(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tot float64
	for _, x := range lps {
		tot -= x
	}
	if !near(tot, nll.Nats, 1e-9) {
		t.Fatalf("Σ −logprob %v, TextNLL %v", tot, nll.Nats)
	}
	for _, bad := range [][]int32{{5}, {1, 256}, {-1, 3}} {
		if _, err := s.TokenLogProbs(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestScoreText: the JSON result over a run directory: a text with the
// start token, the same ids given as tokens, and the refusals.
func TestScoreText(t *testing.T) {
	_, run := tinyModel(t)
	r, err := ScoreText(ScoreOptions{Run: run, Text: "To be, or not"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tokens) != 14 || r.Tokens[0].ID != '\n' || r.Tokens[0].LogProb != nil || r.Scored != 13 || r.Bytes != 13 || r.Step != 40 {
		t.Fatalf("result %+v", r)
	}
	var tot float64
	for _, tk := range r.Tokens[1:] {
		tot -= *tk.LogProb
	}
	if !near(tot, r.TotalNLL, 1e-12) || !near(r.MeanNLL, tot/13, 1e-12) || !near(r.BitsPerByte, tot/(math.Ln2*13), 1e-12) {
		t.Fatalf("totals %+v (Σ %v)", r, tot)
	}
	ids := make([]int32, len(r.Tokens))
	for i, tk := range r.Tokens {
		ids[i] = tk.ID
	}
	r2, err := ScoreText(ScoreOptions{Run: run, Tokens: ids})
	if err != nil || r2.TotalNLL != r.TotalNLL || r2.Bytes != 0 {
		t.Fatalf("tokens: %+v %v", r2, err)
	}
	r3, err := ScoreText(ScoreOptions{Run: run, Text: "To be, or not", NoStart: true})
	if err != nil || len(r3.Tokens) != 13 || r3.Tokens[0].ID != 'T' {
		t.Fatalf("no start: %+v %v", r3, err)
	}
	for _, o := range []ScoreOptions{{Text: "x"}, {Run: run}, {Run: run, Text: "x", Tokens: []int32{1, 2}}, {Run: run, Tokens: []int32{1, 999}}} {
		if _, err := ScoreText(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if got, err := ParseTokens("1, 2 3,40"); err != nil || len(got) != 4 || got[3] != 40 {
		t.Fatalf("ParseTokens %v %v", got, err)
	}
	if _, err := ParseTokens("1,x"); err == nil || !strings.Contains(err.Error(), "item 2") {
		t.Fatalf("ParseTokens bad: %v", err)
	}
}
