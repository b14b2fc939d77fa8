package dashboard

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

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
			Title: fmt.Sprintf("%s: rewound from step %d to %d", iv.ID, iv.FromStep, iv.ToStep), Detail: iv.Summary()})
	}
	return out
}
