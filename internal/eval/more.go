package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/kestrel-lm/kestrel/internal/openrun"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// GSMItem is one GSM8K problem: the question and its worked gold answer
// (ending in "#### N").
type GSMItem struct {
	Question, Answer string
}

// GSMRequest is the scored request of a GSM8K item: context
// "Question: {question}\nAnswer:", continuation " {answer}".
func GSMRequest(it GSMItem) Request {
	return Request{Context: "Question: " + it.Question + "\nAnswer:", Continuation: " " + it.Answer}
}

// ReadGSM8K reads GSM8K's test.jsonl ({question, answer}). limit > 0 keeps
// the first limit items. A malformed line is refused naming file:line.
func ReadGSM8K(path string, limit int) ([]GSMItem, error) {
	var items []GSMItem
	err := eachLine(path, limit, func(line []byte) error {
		var r struct {
			Question *string `json:"question"`
			Answer   *string `json:"answer"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.Question == nil || r.Answer == nil || *r.Answer == "" {
			return fmt.Errorf("want the fields question and answer (non-empty)")
		}
		items = append(items, GSMItem{*r.Question, *r.Answer})
		return nil
	})
	return items, err
}

// NLLResult is a mean negative log-likelihood per byte over items.
type NLLResult struct {
	Task       string  `json:"task"`
	N          int     `json:"n"`
	NatsPerB   float64 `json:"nll_nats_per_byte"`
	BitsPerB   float64 `json:"nll_bits_per_byte"`
	StderrNats float64 `json:"stderr_nats"`
	StderrBits float64 `json:"stderr_bits"`
	Truncated  int     `json:"truncated"` // items whose answer did not fit whole in seq_len
	Seconds    float64 `json:"seconds"`
}

// MeanStderr is the mean of xs and its standard error sqrt(var/n), var the
// sample variance (n−1); the error is 0 when n < 2.
func MeanStderr(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1) / float64(len(xs)))
}

// GSM8KNLL scores each item's gold answer after its question (GSMRequest)
// and returns the mean over items of −log p(answer) / bytes(answer), the
// bytes being those of the continuation " {answer}" (leading space
// included). When the answer does not fit in seq_len + 1 tokens only its
// last tokens are scored and divided by the bytes they decode to.
func (s *Scorer) GSM8KNLL(items []GSMItem) (NLLResult, error) {
	reqs := make([]Request, len(items))
	for i, it := range items {
		reqs[i] = GSMRequest(it)
	}
	scores, err := s.ScoreAll(reqs)
	if err != nil {
		return NLLResult{}, err
	}
	r := NLLResult{Task: "gsm8k-nll", N: len(items)}
	per := make([]float64, len(items))
	for i, sc := range scores {
		bytes := sc.Bytes
		c, err := s.Codec.Encode(reqs[i].Continuation)
		if err != nil {
			return NLLResult{}, fmt.Errorf("item %d: %w", i, err)
		}
		if sc.Tokens < len(c) {
			r.Truncated++
			bytes = len(s.Codec.Decode(c[len(c)-sc.Tokens:]))
		}
		per[i] = -sc.LogProb / float64(max(bytes, 1))
	}
	r.NatsPerB, r.StderrNats = MeanStderr(per)
	r.BitsPerB, r.StderrBits = r.NatsPerB/math.Ln2, r.StderrNats/math.Ln2
	return r, nil
}

// TokensNLL sums the NLL of ids (already encoded, without the start token)
// as TextNLL does: the codec's start token in front, non-overlapping windows
// of seq_len predictions, at most maxWindows of them when maxWindows > 0.
// Bytes is the length of the decoded tokens predicted.
func (s *Scorer) TokensNLL(ids []int32, maxWindows int) (NLL, error) {
	if len(ids) == 0 {
		return NLL{}, fmt.Errorf("no tokens to score")
	}
	seqs := s.windows(append(append([]int32(nil), s.Codec.Start...), ids...), maxWindows)
	var res NLL
	if err := s.forwardAll(seqs, func(sq seq, lps []float64) { res.Nats -= sum(lps); res.Tokens += sq.cont }); err != nil {
		return NLL{}, err
	}
	res.Bytes = len(s.Codec.Decode(ids[:res.Tokens]))
	return res, nil
}

// runData is the run's data (openrun.OpenData), with the memorization
// test's documents (memDocs).
type runData struct{ *openrun.Data }

// MemDefaultDocs is the number of documents per split memorization uses
// when no --limit is given.
const MemDefaultDocs = 50

// runMore runs the tasks gsm8k-nll, memorization and bpb-val into res.
func (s *Scorer) runMore(task string, opt Options, st checkpoint.State, res *Result) error {
	t0 := time.Now()
	if task == "gsm8k-nll" {
		files, err := TaskFiles(task)
		if err != nil {
			return err
		}
		p := files[0]
		items, err := ReadGSM8K(p, opt.Limit)
		if err != nil {
			return err
		}
		r, err := s.GSM8KNLL(items)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		r.Seconds = time.Since(t0).Seconds()
		res.NLL = append(res.NLL, r)
		return nil
	}
	od, err := openrun.OpenData(opt.Run, st)
	if err != nil {
		return err
	}
	d := runData{od}
	defer d.Close()
	if task == "memorization" {
		n := opt.Limit
		if n <= 0 {
			n = MemDefaultDocs
		}
		pre, cont := MemLengths(s.Model.Cfg.SeqLen)
		m := &MemResult{Prefix: pre, Cont: cont}
		for _, side := range []struct {
			split string
			dst   *MemSide
		}{{shards.Train, &m.Train}, {shards.Val, &m.HeldOut}} {
			docs, err := d.memDocs(side.split, n, pre+cont)
			if err != nil {
				return err
			}
			if *side.dst, err = s.Memorize(side.split, docs, pre); err != nil {
				return err
			}
		}
		m.Seconds = time.Since(t0).Seconds()
		res.Mem = m
		return nil
	}
	// bpb-val
	if d.Dataset == nil {
		n, err := s.TextNLL(string(d.Val), opt.Limit)
		if err != nil {
			return err
		}
		res.BPB = append(res.BPB, BPBResult{Name: "val", File: opt.Run + "/config.toml data.val", Tokens: n.Tokens, Bytes: n.Bytes,
			Nats: n.Nats, BPB: n.BitsPerByte(), Seconds: time.Since(t0).Seconds()})
		return nil
	}
	var all NLL
	for _, src := range d.Dataset.Sources() {
		t1 := time.Now()
		stm, err := d.Dataset.Stream(src, shards.Val)
		if err != nil {
			return err
		}
		if stm.Len() == 0 {
			continue
		}
		ids := make([]int32, stm.Len())
		if err := stm.ReadAt(ids, 0); err != nil {
			return err
		}
		n, err := s.TokensNLL(ids, opt.Limit)
		if err != nil {
			return fmt.Errorf("source %s: %w", src, err)
		}
		// the document separators are predicted but are not text: their
		// bytes (e.g. "<|endoftext|>") do not count
		if len(s.Codec.Start) == 1 {
			sep, sb := s.Codec.Start[0], len(s.Codec.Decode(s.Codec.Start))
			for _, id := range ids[:n.Tokens] {
				if id == sep {
					n.Bytes -= sb
				}
			}
		}
		all.Nats, all.Tokens, all.Bytes = all.Nats+n.Nats, all.Tokens+n.Tokens, all.Bytes+n.Bytes
		res.BPB = append(res.BPB, BPBResult{Name: "val/" + src, File: d.Dataset.Dir(), Tokens: n.Tokens, Bytes: n.Bytes,
			Nats: n.Nats, BPB: n.BitsPerByte(), Seconds: time.Since(t1).Seconds()})
	}
	if all.Bytes == 0 {
		return fmt.Errorf("dataset %s has no validation tokens", d.Dataset.Dir())
	}
	res.BPB = append(res.BPB, BPBResult{Name: "val/all", File: d.Dataset.Dir(), Tokens: all.Tokens, Bytes: all.Bytes,
		Nats: all.Nats, BPB: all.BitsPerByte(), Seconds: time.Since(t0).Seconds()})
	return nil
}
