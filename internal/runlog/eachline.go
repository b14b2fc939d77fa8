package runlog

import (
	"bufio"
	"errors"
	"io"
)

// EachLine calls fn with every complete line of r (its newline
// included), as metrics.jsonl's reader splits them: a line over 16 MiB is
// skipped and counted in tooLong, and a last line without its newline (a
// writer mid-append) is left out. fn must not keep line.
func EachLine(r io.Reader, fn func(line []byte)) (tooLong int, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, _, err := readLine(br, maxLineBytes)
		switch {
		case errors.Is(err, errLineTooLong):
			tooLong++
			continue
		case err == io.EOF:
			return tooLong, nil
		case err != nil:
			return tooLong, err
		}
		fn(line)
	}
}
