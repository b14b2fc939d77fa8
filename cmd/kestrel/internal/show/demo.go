package show

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/kestrel-lm/kestrel/internal/run"
)

// DemoSummary prints where a finished kestrel demo left everything: the
// report's verdict, the held-out loss against the unigram baseline, the
// dataset, run and report paths, and the commands to look further.
func DemoSummary(out io.Writer, r *run.DemoResult) error {
	ew := &errWriter{w: out}
	sum := r.Report
	fmt.Fprintf(ew, "verdict: %s\n", map[bool]string{true: "healthy", false: "needs a look"}[sum.Healthy])
	for _, v := range sum.Verdicts {
		fmt.Fprintf(ew, "  %s\n", v)
	}
	if !math.IsNaN(sum.FinalVal) {
		fmt.Fprintf(ew, "held-out loss %.3f (EMA weights %.3f) vs unigram baseline %.3f nats/token\n", sum.FinalVal, sum.FinalValEMA, sum.Unigram)
	}
	fmt.Fprintf(ew, `
dataset   %[1]s   (report.json, rejects/, shards/, manifest.json)
run       %[2]s   (metrics.jsonl, metrics.sqlite, alerts.jsonl, trace.json, checkpoints/)
report    %[3]s

look further:
`, r.Data, r.Run, sum.Path)
	tw := tabwriter.NewWriter(ew, 0, 0, 3, ' ', 0)
	for _, l := range [][2]string{
		{"kestrel dash " + r.Run, "live panel in the browser"},
		{"kestrel data inspect " + r.Data + " --n 2", "decode sample documents back to text"},
		{"kestrel sample --run " + r.Run + ` --prompt "ROMEO:" --ema`, "generate text with the EMA weights"},
		{"kestrel watch " + r.Run, "the alert rules over the run's metrics"},
	} {
		fmt.Fprintf(tw, "  %s\t%s\n", l[0], l[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return ew.err
}
