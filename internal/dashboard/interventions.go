package dashboard

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// interventionEvents are the run's interventions.jsonl entries as events
// of kind "intervention", placed at the step the run was rewound to.
func interventionEvents(root runRoot) []Event {
	data, err := root.readFile(runlog.InterventionsFile)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("dashboard: interventions not read", "err", err)
		}
		return nil
	}
	ivs, err := runlog.ParseInterventions(data, runlog.InterventionsFile)
	if err != nil {
		slog.Warn("dashboard: interventions not read", "err", err)
		return nil
	}
	out := make([]Event, 0, len(ivs))
	for _, iv := range ivs {
		out = append(out, Event{Step: float64(iv.ToStep), Tokens: -1, Time: -1, Kind: "intervention",
			Title: fmt.Sprintf("%s: rewound from step %d to %d", iv.ID, iv.FromStep, iv.ToStep), Detail: InterventionDetail(&iv)})
	}
	return out
}

// InterventionDetail is one line saying what an intervention changed.
func InterventionDetail(iv *runlog.Intervention) string {
	var parts []string
	if iv.SkipSteps > 0 {
		parts = append(parts, fmt.Sprintf("skipped the batches of steps %d–%d", iv.SkipFrom, iv.SkipTo))
	}
	if iv.LRScale > 0 && iv.LRScale != 1 {
		if iv.LRSteps > 0 {
			parts = append(parts, fmt.Sprintf("LR ×%g for %d steps", iv.LRScale, iv.LRSteps))
		} else {
			parts = append(parts, fmt.Sprintf("LR ×%g", iv.LRScale))
		}
	}
	keys := make([]string, 0, len(iv.Set))
	for k := range iv.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+" = "+iv.Set[k])
	}
	if iv.Reason != "" {
		parts = append(parts, "reason: "+iv.Reason)
	}
	return strings.Join(parts, "; ")
}
