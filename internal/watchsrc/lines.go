package watchsrc

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxLineBytes bounds one line of a text source (JSONL, CSV, a training
// log). A longer line is an error naming it: the reader never holds more
// than this much of one line, whatever the file.
const MaxLineBytes = 16 << 20

// errLineTooLong is returned for a line over MaxLineBytes (the caller names
// the line).
var errLineTooLong = fmt.Errorf("line longer than %d MiB (not a metrics log?)", MaxLineBytes>>20)

// lineReader splits a stream into lines of at most MaxLineBytes. At EOF it
// keeps an unterminated last line, so a follower can wait for the rest.
type lineReader struct {
	br      *bufio.Reader
	partial []byte // the current line's bytes read so far
	n       int    // lines returned so far
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next complete line without its newline (valid until the
// next call). At the end of the stream it returns io.EOF and keeps any
// unterminated tail for a later call (follow mode) or for rest.
func (l *lineReader) next() ([]byte, error) {
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.partial)+len(chunk) > MaxLineBytes+1 {
			return nil, errLineTooLong // line l.n+1
		}
		if err == nil {
			l.n++
			if len(l.partial) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			l.partial = append(l.partial, chunk...)
			line := l.partial[:len(l.partial)-1]
			l.partial = l.partial[:0]
			return line, nil
		}
		l.partial = append(l.partial, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return nil, err
	}
}

// rest returns the unterminated last line, if any, and counts it.
func (l *lineReader) rest() ([]byte, bool) {
	if len(bytes.TrimSpace(l.partial)) == 0 {
		return nil, false
	}
	l.n++
	line := l.partial
	l.partial = nil
	return line, true
}

// parseTextLine reads one line of a plain-text training log into f (names
// as the log writes them, before renaming):
//
//   - llm.c's main.log: "s:100 trl:3.2816 lr:0.000600 norm:1.05",
//     "s:100 tel:3.3002", "s:100 eval:0.2950" (s is the step);
//   - nanoGPT's train.py output: "iter 100: loss 2.0304, time 43.12ms,
//     mfu 12.01%" and "step 250: train loss 1.9812, val loss 2.0701"
//     (the eval's train-split estimate is train_loss_eval; time in ms
//     becomes step_time in seconds, mfu in % a fraction).
//
// ok is false when the line is neither.
func parseTextLine(line string, f *fields) bool {
	if strings.HasPrefix(line, "s:") {
		return parseKeyColon(line, f)
	}
	return parseIterLine(line, f)
}

// parseKeyColon reads space-separated key:number pairs (llm.c).
func parseKeyColon(line string, f *fields) bool {
	parts := strings.Fields(line)
	if len(parts) < 2 {
		return false
	}
	f.reset()
	for _, p := range parts {
		k, v, ok := strings.Cut(p, ":")
		if !ok || k == "" {
			return false
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return false
		}
		if k == "s" {
			k = "step"
		}
		f.raw[k] = x
	}
	_, ok := f.raw["step"]
	return ok
}

// parseIterLine reads "iter N: key value, key value …" or "step N: …"
// (nanoGPT). A key of several words joins them with "_".
func parseIterLine(line string, f *fields) bool {
	head, body, ok := strings.Cut(line, ":")
	if !ok {
		return false
	}
	word, num, ok := strings.Cut(strings.TrimSpace(head), " ")
	if !ok || (word != "iter" && word != "step") {
		return false
	}
	step, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil {
		return false
	}
	f.reset()
	f.raw["step"] = float64(step)
	for _, kv := range strings.Split(body, ",") {
		ws := strings.Fields(kv)
		if len(ws) < 2 {
			return false
		}
		key, val := strings.Join(ws[:len(ws)-1], "_"), ws[len(ws)-1]
		scale := 1.0
		switch {
		case strings.HasSuffix(val, "ms"):
			val, scale = strings.TrimSuffix(val, "ms"), 1e-3
		case strings.HasSuffix(val, "%"):
			val, scale = strings.TrimSuffix(val, "%"), 1e-2
		case strings.HasSuffix(val, "s"):
			val = strings.TrimSuffix(val, "s")
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return false
		}
		switch key {
		case "time":
			key = "step_time"
		case "train_loss":
			if word == "step" {
				key = "train_loss_eval" // an estimate over eval batches, not this step's loss
			}
		case "mfu":
			if x < 0 {
				continue // nanoGPT prints -100% until its estimate starts
			}
		}
		f.raw[key] = x * scale
	}
	return true
}

// csvTable reads CSV exports (W&B's run history with _step, train/loss,
// _runtime, _timestamp; W&B's chart export "Step", "run - train/loss",
// "run - train/loss__MIN"; Keras' CSVLogger): a header line, then one row a
// line. Empty cells are absent values.
type csvTable struct {
	cols []string // "" for a column left out (__MIN/__MAX bands)
}

// header reads the column names.
func (c *csvTable) header(line []byte) error {
	rec, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil {
		return fmt.Errorf("csv header: %w", err)
	}
	c.cols = make([]string, len(rec))
	for i, name := range rec {
		name = strings.TrimSpace(name)
		if strings.HasSuffix(name, "__MIN") || strings.HasSuffix(name, "__MAX") {
			continue
		}
		if _, after, ok := strings.Cut(name, " - "); ok {
			name = after
		}
		c.cols[i] = name
	}
	return nil
}

// row reads one data line into f.
func (c *csvTable) row(line []byte, f *fields) error {
	r := csv.NewReader(bytes.NewReader(line))
	r.FieldsPerRecord = len(c.cols)
	rec, err := r.Read()
	if err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	f.reset()
	for i, cell := range rec {
		cell = strings.TrimSpace(cell)
		if c.cols[i] == "" || cell == "" {
			continue
		}
		x, err := strconv.ParseFloat(cell, 64) // NaN, Inf, Infinity in any case too
		if err != nil {
			f.strs[c.cols[i]] = cell
			continue
		}
		f.raw[c.cols[i]] = x
	}
	return nil
}
