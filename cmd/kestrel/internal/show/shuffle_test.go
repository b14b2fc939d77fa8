package show

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/data/loader/shufflereport"
)

// TestShuffleReport: one table row (after the header, before the closing
// line and the plot) or one JSON object per permutation; nothing for a
// report that measured nothing.
func TestShuffleReport(t *testing.T) {
	opt := shufflereport.Options{Permutations: []string{"feistel", " lcg"}, Steps: 300, Batch: 32, Blocks: 16, Lags: 20, LCGStride: 3,
		Items: 50000, Data: loader.DefaultConfig(), RunSeed: 1}
	comps, _, err := shufflereport.Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	res := &shufflereport.Result{Comps: comps, Plot: "r.png"}
	var table, js bytes.Buffer
	if err := ShuffleReport(&table, res, false); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[1], "feistel ") ||
		!strings.HasPrefix(lines[2], "lcg stride 3") || lines[4] != "plot: r.png" {
		t.Fatalf("table:\n%s", table.String())
	}
	if err := ShuffleReport(&js, res, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["permutation"] != comps[i].Label || rec["max_abs_acf"] != shufflereport.MaxAbsACF(comps[i]) {
			t.Fatalf("JSON line %d %q: %v", i, line, err)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines for 2 permutations", len(lines))
	}
	var none bytes.Buffer
	if err := ShuffleReport(&none, nil, false); err != nil || none.Len() != 0 {
		t.Errorf("nil result printed %q, %v", none.String(), err)
	}
}
