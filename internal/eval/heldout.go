package eval

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// HeldoutTask is kestrel eval's task name for the held-out sets: the run's
// [eval] heldout, plus --heldout.
const HeldoutTask = "heldout"

// CheckHeldout checks every held-out set's file before training starts and
// returns "heldout/<name>" → the sha256 of the whole file, for the run
// manifest. A file that is missing, not a regular file (a directory, a
// FIFO, a device), empty or blank, or not valid UTF-8 (the byte offset and
// line of the first bad byte are named) is an error naming the set and the
// file.
func CheckHeldout(sets []evalcfg.HeldoutSet) (map[string]string, error) {
	out := map[string]string{}
	for i, h := range sets {
		sum, err := checkText(h.Path) // resolved by config.Resolve, openrun or flagx
		if err != nil {
			return nil, fmt.Errorf("eval.heldout[%d] (%s): %w", i, h.Name, err)
		}
		out["heldout/"+h.Name] = sum
	}
	return out, nil
}

// checkText reads the file at p once: its sha256, and that it holds
// valid UTF-8 with at least one non-space character.
func checkText(p string) (string, error) {
	f, err := fileguard.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: no such file", p)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	r := bufio.NewReaderSize(io.TeeReader(f, h), 64<<10)
	var off int64
	line, text := 1, false
	for {
		c, size, err := r.ReadRune()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		if c == utf8.RuneError && size == 1 {
			return "", fmt.Errorf("%s: not UTF-8 text: invalid byte at offset %d (line %d)", p, off, line)
		}
		if c == '\n' {
			line++
		}
		text = text || !unicode.IsSpace(c)
		off += int64(size)
	}
	if !text {
		return "", fmt.Errorf("%s: no text to score (the file is empty or blank)", p)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// headText is the first maxBytes bytes of the file at p (the whole file
// when maxBytes ≤ 0, up to maxTextBytes), cut back to a character
// boundary, refused when it is not UTF-8 or has no text.
func headText(p string, maxBytes int) (string, error) {
	f, err := fileguard.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	n := int64(maxTextBytes)
	if maxBytes > 0 {
		n = int64(maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	// a character cut by the bound is left out whole
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		if utf8.RuneStart(b[len(b)-k]) {
			if !utf8.FullRune(b[len(b)-k:]) {
				b = b[:len(b)-k]
			}
			break
		}
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s: not UTF-8 text", p)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "", fmt.Errorf("%s: no text to score (the file is empty or blank)", p)
	}
	return string(b), nil
}

// Heldout scores each held-out set's text (its first maxBytes bytes; 0 =
// all) as bits per byte: one BPBResult named "heldout/<name>" per set,
// whose metric is bpb/heldout/<name>.
func (s *Scorer) Heldout(sets []evalcfg.HeldoutSet, maxBytes int) ([]BPBResult, error) {
	var out []BPBResult
	for _, h := range sets {
		t0 := time.Now()
		p := h.Path // resolved by config.Resolve, openrun or flagx
		text, err := headText(p, maxBytes)
		if err != nil {
			return nil, fmt.Errorf("heldout %s: %w", h.Name, err)
		}
		n, err := s.TextNLL(text, 0)
		if err != nil {
			return nil, fmt.Errorf("heldout %s: %s: %w", h.Name, p, err)
		}
		out = append(out, BPBResult{Name: "heldout/" + h.Name, File: p, Tokens: n.Tokens, Bytes: n.Bytes,
			Nats: n.Nats, BPB: n.BitsPerByte(), Seconds: time.Since(t0).Seconds()})
	}
	return out, nil
}
