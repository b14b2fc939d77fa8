package show

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/kestrel-lm/kestrel/internal/data/loader/shufflereport"
)

// ShuffleReport prints what kestrel data shuffle-report measured: a table
// of each permutation's statistics with a closing line that gives the
// |acf| of i.i.d. batches, then the plot written; or with asJSON one JSON
// object per permutation. A nil res prints nothing.
func ShuffleReport(w io.Writer, res *shufflereport.Result, asJSON bool) error {
	if res == nil {
		return nil
	}
	comps := res.Comps
	if asJSON {
		enc := json.NewEncoder(w)
		for _, c := range comps {
			if err := enc.Encode(map[string]any{
				"permutation": c.Label, "steps": c.Steps, "labels": c.Labels,
				"lag1_acf": c.Lag1(), "max_abs_acf": shufflereport.MaxAbsACF(c), "max_dominated_run": c.MaxRun,
				"max_run_label": c.RunLabel, "max_run_start": c.RunStart,
				"mean_max_share": c.MeanMaxShare, "mean_tv": c.MeanTV,
			}); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(w, "%-22s %8s %10s %8s %15s %8s\n", "permutation", "lag1", "max|acf|", "max_run", "mean_max_share", "mean_tv")
	for _, c := range comps {
		fmt.Fprintf(w, "%-22s %8.3f %10.3f %8d %15.3f %8.3f\n", c.Label, c.Lag1(), shufflereport.MaxAbsACF(c), c.MaxRun, c.MeanMaxShare, c.MeanTV)
	}
	if len(comps) > 0 {
		fmt.Fprintf(w, "(%d batches, %d blocks; i.i.d. batches give |acf| ≈ %.2f and max_run 0)\n",
			comps[0].Steps, comps[0].Labels, 2/math.Sqrt(float64(comps[0].Steps*comps[0].Labels)))
	}
	if res.Plot != "" {
		_, err := fmt.Fprintf(w, "plot: %s\n", res.Plot)
		return err
	}
	return nil
}
