package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure kestrel's hot paths and print JSON lines",
		Long:  helpText("bench"),
	}
	cmd.AddCommand(newBenchGemmCmd(), newBenchStepCmd(), newBenchPrepareCmd(), newBenchTokenizeCmd(), newBenchLoaderCmd(), newBenchPeakCmd())
	cmd.AddCommand(newBenchEvalCmd(), newBenchSampleCmd())
	return cmd
}

// printJSON writes v as one line of JSON (the --json output of the bench
// commands).
func printJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// emit prints one result: fields as a JSON object with --json, else line.
func emit(w io.Writer, asJSON bool, fields any, line string) error {
	if asJSON {
		return printJSON(w, fields)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
