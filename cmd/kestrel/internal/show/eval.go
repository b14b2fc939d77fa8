package show

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kestrel-lm/kestrel/internal/eval"
)

// Eval prints the result as JSON (asJSON) or as EvalTable's tables.
func Eval(w io.Writer, r *eval.Result, asJSON bool) error {
	if asJSON {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(r)
	}
	return EvalTable(w, r)
}

// EvalTable prints the result as aligned text tables.
func EvalTable(w io.Writer, r *eval.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "checkpoint %s (step %d%s)\n", r.Checkpoint, r.Step, map[bool]string{true: ", EMA"}[r.EMA])
	for _, c := range r.Coverage {
		if w := c.Warning(); w != "" {
			fmt.Fprintln(tw, w)
		}
	}
	if len(r.MC) > 0 {
		fmt.Fprintln(tw, "task\tn\tacc\t±\tacc_norm\t±\titems/s\t")
		for _, m := range r.MC {
			fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.1f\t\n", m.Task, m.N, m.Acc, m.AccStderr, m.AccNorm, m.AccNormStderr, m.ItemsPerSec)
		}
	}
	if len(r.BPB) > 0 {
		fmt.Fprintln(tw, "text\ttokens\tbytes\tbits/byte\tseconds\t")
		for _, b := range r.BPB {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.1f\t\n", b.Name, b.Tokens, b.Bytes, b.BPB, b.Seconds)
		}
	}
	if len(r.NLL) > 0 {
		fmt.Fprintln(tw, "task\tn\tnats/byte\t±\tbits/byte\t±\ttruncated\tseconds\t")
		for _, x := range r.NLL {
			fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%.1f\t\n", x.Task, x.N, x.NatsPerB, x.StderrNats, x.BitsPerB, x.StderrBits, x.Truncated, x.Seconds)
		}
	}
	if m := r.Mem; m != nil {
		fmt.Fprintf(tw, "memorization: %d-token prefix, %d greedy tokens, %.1f s\n", m.Prefix, m.Cont, m.Seconds)
		fmt.Fprintln(tw, "split\tdocs\texact match\ttoken overlap\t±\t")
		for _, x := range []eval.MemSide{m.Train, m.HeldOut} {
			fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%.4f\t\n", x.Split, x.Docs, x.ExactMatch, x.Overlap, x.OverlapStderr)
		}
	}
	return tw.Flush()
}
