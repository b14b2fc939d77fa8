package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The text form of token ids, as `kestrel tokenizer encode` writes and
// `kestrel tokenizer decode` reads them: either whitespace-separated
// decimal ids, or one JSON array per line.

// EncodeText reads all of r and writes its token ids to w, space-separated
// or, with asJSON, as one JSON array, followed by a newline. With special,
// special tokens such as <|endoftext|> in the text are recognised.
func (t *Tokenizer) EncodeText(r io.Reader, w io.Writer, asJSON, special bool) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	bw := bufio.NewWriter(w)
	writeIDs(bw, t.encoder(special)(string(data)), asJSON)
	bw.WriteByte('\n')
	return bw.Flush()
}

// EncodeLines encodes each line of r separately (without its newline) and
// writes one JSON array of ids per line to w.
func (t *Tokenizer) EncodeLines(r io.Reader, w io.Writer, special bool) error {
	enc := t.encoder(special)
	bw := bufio.NewWriter(w)
	in := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := in.ReadString('\n')
		if len(line) > 0 {
			writeIDs(bw, enc(strings.TrimSuffix(line, "\n")), true)
			bw.WriteByte('\n')
		}
		if err == io.EOF {
			return bw.Flush()
		}
		if err != nil {
			bw.Flush()
			return fmt.Errorf("read: %w", err)
		}
	}
}

func (t *Tokenizer) encoder(special bool) func(string) []int32 {
	if special {
		return t.EncodeSpecial
	}
	return t.Encode
}

func writeIDs(w *bufio.Writer, ids []int32, asJSON bool) {
	if asJSON {
		w.WriteByte('[')
	}
	for i, id := range ids {
		if i > 0 {
			if asJSON {
				w.WriteByte(',')
			} else {
				w.WriteByte(' ')
			}
		}
		w.WriteString(strconv.FormatInt(int64(id), 10))
	}
	if asJSON {
		w.WriteByte(']')
	}
}

// DecodeLines reads ids from r and writes the exact bytes they stand for to
// w. A line holding a JSON array (EncodeLines' output) decodes to one line
// of text; other lines are whitespace-separated ids decoded with no newline
// added, so EncodeText's output decodes to the original text. An id that is
// not a number or not in the vocabulary is an error naming its line.
func (t *Tokenizer) DecodeLines(r io.Reader, w io.Writer) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	in := bufio.NewReaderSize(r, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, rerr := in.ReadString('\n')
		s := strings.TrimSpace(line)
		var ids []int32
		if strings.HasPrefix(s, "[") {
			if err := json.Unmarshal([]byte(s), &ids); err != nil {
				return fmt.Errorf("line %d: %w", lineNo, err)
			}
		} else {
			for _, f := range strings.Fields(s) {
				v, err := strconv.ParseInt(f, 10, 32)
				if err != nil {
					return fmt.Errorf("line %d: id %q: %w", lineNo, f, err)
				}
				ids = append(ids, int32(v))
			}
		}
		for _, id := range ids {
			if !t.ValidID(id) {
				return fmt.Errorf("line %d: id %d is not in the vocabulary (%d)", lineNo, id, t.VocabSize())
			}
		}
		bw.Write(t.Decode(ids))
		if strings.HasPrefix(s, "[") {
			bw.WriteByte('\n')
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("read: %w", rerr)
		}
	}
}
