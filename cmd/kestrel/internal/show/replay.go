package show

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/replay"
)

// Replay prints the result for a person: the checkpoint, the probe beside
// the logged values, one line per replayed step, then each step's rows
// with their documents. (Its JSON, replay.Result.WriteJSON, is a file
// format: kestrel quarantine --from-replay reads it.)
func Replay(w io.Writer, r *replay.Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "run %s, weights of %s (after step %d)\n", r.Run, r.Checkpoint, r.CkptStep)
	for _, s := range r.Warnings {
		fmt.Fprintf(bw, "warning: %s\n", s)
	}
	if p := r.Probe; p != nil {
		fmt.Fprintf(bw, "\nfixed probe batch (%d positions)\n", p.Positions)
		fmt.Fprintf(bw, "  fixed_probe_loss     %.6f   logged at step %d: %s   now (step %d): %s\n", float64(p.Loss), r.CkptStep, replayNum(p.LoggedLoss), p.LastStep, replayNum(p.LastLoss))
		fmt.Fprintf(bw, "  logit_entropy_probe  %.6f\n", float64(p.Entropy))
		fmt.Fprintf(bw, "  topk_mass_probe      %.6f\n", float64(p.TopKMass))
	}
	if len(r.Steps) > 0 {
		fmt.Fprintf(bw, "\n%6s %6s %6s %12s %12s %12s %12s  %s\n", "step", "data", "batch", "loss", "logged_loss", "grad_norm", "logged_gnorm", "sources (rows)")
		for _, s := range r.Steps {
			fmt.Fprintf(bw, "%6d %6d %6d %12.6f %12s %12.6f %12s  %s\n", s.Step, s.DataStep, s.Batch, float64(s.Loss), replayNum(s.LoggedLoss), float64(s.GradNorm), replayNum(s.LoggedGradNorm), replaySources(s.Rows))
		}
		for _, s := range r.Steps {
			if len(s.Rows) == 0 {
				continue
			}
			fmt.Fprintf(bw, "\nstep %d documents (the batch of data step %d)\n", s.Step, s.DataStep)
			for _, row := range s.Rows {
				ids := make([]string, len(row.Docs))
				for i, d := range row.Docs {
					ids[i] = d.ID
					if d.Offset > 0 {
						ids[i] += fmt.Sprintf("@+%d", d.Offset)
					}
				}
				if len(ids) == 0 {
					ids = []string{"-"}
				}
				fmt.Fprintf(bw, "  row %3d  %-16s pass %d  %s\n", row.Row, row.Source, row.Epoch+1, strings.Join(ids, " "))
				if row.Text != nil {
					fmt.Fprintf(bw, "           %s\n", strconv.Quote(*row.Text))
				}
			}
		}
	}
	return bw.Flush()
}

func replayNum(f replay.Float) string {
	v := float64(f)
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

func replaySources(rows []replay.Row) string {
	n := map[string]int{}
	for _, r := range rows {
		n[r.Source]++
	}
	names := make([]string, 0, len(n))
	for k := range n {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}
