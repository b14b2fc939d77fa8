// Package show is kestrel's terminal output: the tables and one-line
// summaries its commands print, written from the values the library
// packages return (the way cmd/go/internal/<cmd> keeps printing beside
// the command). File formats (runlog, safetensors, tfevents, report.md,
// checkpoints) are written by their owners, not here.
package show

import (
	"encoding/json"
	"fmt"
	"io"
)

// JSON writes v as one line of JSON (the --json output of the bench
// commands and of kestrel score and tokenizer stats).
func JSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// IndentedJSON writes v as one indented JSON document.
func IndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Emit prints one result: fields as a JSON object with asJSON, else line.
func Emit(w io.Writer, asJSON bool, fields any, line string) error {
	if asJSON {
		return JSON(w, fields)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// errWriter keeps the first write error of a printer that writes many
// lines, so the printer checks once at its end.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
