package eval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// Item is one multiple-choice question: the context and the choices as
// continuations (each with its leading space), and the index of the right one.
type Item struct {
	Context string
	Choices []string
	Label   int
}

// eachLine calls f with every non-blank line of path (1-based numbers),
// stopping after limit lines when limit > 0. f's errors are wrapped with
// file:line. path must be a regular file (a FIFO or device is refused, not
// waited on) with at least one non-blank line: a task file without items
// is an error, never a score of 0.
func eachLine(path string, limit int, f func(line []byte) error) error {
	fh, err := fileguard.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n, kept := 0, 0
	for sc.Scan() {
		n++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if limit > 0 && kept == limit {
			break
		}
		if err := f(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		kept++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if kept == 0 {
		return fmt.Errorf("%s: no items (the file has no non-blank line)", path)
	}
	return nil
}

// ReadHellaSwag reads the shipped HellaSwag validation file
// (hellaswag_val_preprocessed.jsonl: {idx, ctx, label, endings}, already
// preprocessed as the harness does: ctx is "activity_label: ctx_a
// Ctx_b" with the [header]/[title] markup removed). Each ending becomes the
// choice " "+ending. limit > 0 keeps the first limit items.
func ReadHellaSwag(path string, limit int) ([]Item, error) {
	var items []Item
	err := eachLine(path, limit, func(line []byte) error {
		var r struct {
			Ctx     *string  `json:"ctx"`
			Label   *int     `json:"label"`
			Endings []string `json:"endings"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		switch {
		case r.Ctx == nil:
			return fmt.Errorf("field ctx missing")
		case len(r.Endings) < 2:
			return fmt.Errorf("field endings has %d entries, want at least 2", len(r.Endings))
		case r.Label == nil || *r.Label < 0 || *r.Label >= len(r.Endings):
			return fmt.Errorf("field label missing or outside [0,%d)", len(r.Endings))
		}
		it := Item{Context: *r.Ctx, Label: *r.Label}
		for _, e := range r.Endings {
			it.Choices = append(it.Choices, " "+e)
		}
		items = append(items, it)
		return nil
	})
	return items, err
}

// ReadPIQA reads PIQA's valid.jsonl ({goal, sol1, sol2}) and its labels file
// (one 0 or 1 per line, in the same order) into items with the harness's
// prompt: context "Question: {goal}\nAnswer:", choices " {sol1}" and
// " {sol2}". limit > 0 keeps the first limit items.
func ReadPIQA(path, labelsPath string, limit int) ([]Item, error) {
	var labels []int
	err := eachLine(labelsPath, limit, func(line []byte) error {
		v, err := strconv.Atoi(strings.TrimSpace(string(line)))
		if err != nil || (v != 0 && v != 1) {
			return fmt.Errorf("label %q: want 0 or 1", line)
		}
		labels = append(labels, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var items []Item
	err = eachLine(path, limit, func(line []byte) error {
		var r struct {
			Goal *string `json:"goal"`
			Sol1 *string `json:"sol1"`
			Sol2 *string `json:"sol2"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.Goal == nil || r.Sol1 == nil || r.Sol2 == nil {
			return fmt.Errorf("want the fields goal, sol1 and sol2")
		}
		if len(items) >= len(labels) {
			return fmt.Errorf("no label for this item in %s (it has %d)", labelsPath, len(labels))
		}
		items = append(items, Item{Context: "Question: " + *r.Goal + "\nAnswer:", Choices: []string{" " + *r.Sol1, " " + *r.Sol2}, Label: labels[len(items)]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(items) != len(labels) {
		return nil, fmt.Errorf("%s has %d items but %s has %d labels", path, len(items), labelsPath, len(labels))
	}
	return items, nil
}

// Choice is what the model chose for one item.
type Choice struct {
	Acc, AccNorm int       // chosen index by log-probability, and by log-probability per byte
	LogProbs     []float64 // per choice
}

// Choose scores every choice of items (all in batches) and returns the
// chosen answers. acc_norm divides by the choice's bytes without its leading
// space, as the harness divides by the length of the choice it appends after
// the " " delimiter.
func (s *Scorer) Choose(items []Item) ([]Choice, error) {
	var reqs []Request
	for _, it := range items {
		for _, c := range it.Choices {
			reqs = append(reqs, Request{it.Context, c})
		}
	}
	scores, err := s.ScoreAll(reqs)
	if err != nil {
		return nil, err
	}
	out := make([]Choice, len(items))
	k := 0
	for i, it := range items {
		sc := scores[k : k+len(it.Choices)]
		for j, c := range it.Choices {
			// the harness divides by len(choice): the text after the
			// target delimiter, the leading space
			sc[j].Bytes = len(strings.TrimPrefix(c, " "))
		}
		out[i] = Pick(sc)
		if s.Dump != nil {
			if err := s.dump(i, it, sc); err != nil {
				return nil, err
			}
		}
		k += len(it.Choices)
	}
	return out, nil
}

// dump writes item i's requests to s.Dump.
func (s *Scorer) dump(i int, it Item, sc []Score) error {
	for j, c := range it.Choices {
		toks, cont, err := s.window(Request{it.Context, c})
		if err != nil {
			return err
		}
		b, err := json.Marshal(DumpLine{Task: s.Task, Item: i, Choice: j, Label: it.Label, Tokens: toks, Cont: cont, Bytes: sc[j].Bytes, LogProb: sc[j].LogProb})
		if err != nil {
			return err
		}
		if _, err := s.Dump.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("dump: %w", err)
		}
	}
	return nil
}

// Pick chooses among the scores of one item's choices: Acc by the highest
// log-probability, AccNorm by the highest log-probability per byte; ties go
// to the first.
func Pick(scores []Score) Choice {
	ch := Choice{LogProbs: make([]float64, len(scores))}
	best, bestN := math.Inf(-1), math.Inf(-1)
	for j, sc := range scores {
		ch.LogProbs[j] = sc.LogProb
		if sc.LogProb > best {
			best, ch.Acc = sc.LogProb, j
		}
		if n := sc.LogProb / float64(max(sc.Bytes, 1)); n > bestN {
			bestN, ch.AccNorm = n, j
		}
	}
	return ch
}

// MCResult is a multiple-choice task's score.
type MCResult struct {
	Task          string  `json:"task"`
	N             int     `json:"n"`
	Acc           float64 `json:"acc"`
	AccStderr     float64 `json:"acc_stderr"`
	AccNorm       float64 `json:"acc_norm"`
	AccNormStderr float64 `json:"acc_norm_stderr"`
	Seconds       float64 `json:"seconds"`
	ItemsPerSec   float64 `json:"items_per_sec"`
}

// Stderr is the harness's standard error of a mean accuracy p over n
// items: sqrt(p(1−p)/(n−1)); 0 when n < 2.
func Stderr(p float64, n int) float64 {
	if n < 2 {
		return 0
	}
	return math.Sqrt(p * (1 - p) / float64(n-1))
}

// Tally turns the choices of items into acc and acc_norm with their
// standard errors.
func Tally(task string, items []Item, ch []Choice) MCResult {
	r := MCResult{Task: task, N: len(items)}
	if len(items) == 0 {
		return r
	}
	var a, an int
	for i, it := range items {
		if ch[i].Acc == it.Label {
			a++
		}
		if ch[i].AccNorm == it.Label {
			an++
		}
	}
	r.Acc, r.AccNorm = float64(a)/float64(r.N), float64(an)/float64(r.N)
	r.AccStderr, r.AccNormStderr = Stderr(r.Acc, r.N), Stderr(r.AccNorm, r.N)
	return r
}
