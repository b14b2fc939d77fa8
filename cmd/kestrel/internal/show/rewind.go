package show

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Rewind tells a person what a rewind of the run directory runDir did and
// how to continue.
func Rewind(w io.Writer, runDir string, iv *runlog.Intervention) {
	fmt.Fprintf(w, "%s: %s rewound from step %d to the checkpoint of step %d (%s)\n", iv.ID, runDir, iv.FromStep, iv.ToStep, iv.Checkpoint)
	if iv.SkipSteps > 0 {
		fmt.Fprintf(w, "  skips the batches of steps %d..%d (%d steps)\n", iv.SkipFrom, iv.SkipTo, iv.SkipSteps)
	}
	if iv.LRScale > 0 && iv.LRScale != 1 {
		span := fmt.Sprintf("%d steps", iv.LRSteps)
		if iv.LRSteps == 0 {
			span = "the rest of the run"
		}
		fmt.Fprintf(w, "  learning rate ×%g for %s\n", iv.LRScale, span)
	}
	keys := make([]string, 0, len(iv.Set))
	for k := range iv.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %s from step %d on\n", k, iv.Set[k], iv.ToStep+1)
	}
	archived := "none"
	if len(iv.ArchivedCheckpoints) > 0 {
		archived = strings.Join(iv.ArchivedCheckpoints, ", ")
	}
	metrics := "none"
	if iv.MetricsArchive != "" {
		metrics = fmt.Sprintf("%s (%d lines)", iv.MetricsArchive, iv.ArchivedLines)
	}
	fmt.Fprintf(w, "  metrics after step %d: %s; newer checkpoints: %s\n", iv.ToStep, metrics, archived)
	fmt.Fprintf(w, "continue with the same command: kestrel train --config <the run's config> --out %s\n", runDir)
}
