package monitor

import (
	"encoding/json"
	"fmt"
)

// DataVitalNames are the run-start data metrics looked for in a dataset
// manifest or report.
var DataVitalNames = []string{"near_dup_rate", "train_val_overlap", "bytes_per_token", "seq_len_p50", "seq_len_p95"}

// DataVitalsFromJSON extracts the data vitals from a dataset manifest or
// report (a JSON object): the first numeric value found under each name
// at any depth. Missing names are left out.
func DataVitalsFromJSON(b []byte, file string) (map[string]float64, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("data vitals: %s: %w", file, err)
	}
	out := map[string]float64{}
	want := map[string]bool{}
	for _, n := range DataVitalNames {
		want[n] = true
	}
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case map[string]any:
			for k, e := range y {
				if f, ok := e.(float64); ok && want[k] {
					if _, have := out[k]; !have {
						out[k] = f
					}
				}
			}
			for _, e := range y {
				walk(e)
			}
		case []any:
			for _, e := range y {
				walk(e)
			}
		}
	}
	walk(v)
	return out, nil
}
