package dashboard

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestAPIEventsInterventions: interventions.jsonl entries are served by
// /api/events as kind "intervention" at the step rewound to.
func TestAPIEventsInterventions(t *testing.T) {
	ts, root := newTestServer(t)
	iv := &runlog.Intervention{ID: "rewind-1", Kind: "rewind", FromStep: 400, ToStep: 280, SkipFrom: 290, SkipTo: 310, SkipSteps: 21,
		LRScale: 0.5, LRSteps: 50, Set: map[string]string{"optim.max_grad_norm": "0.2"}, Reason: "loss spike at 300", Checkpoint: "checkpoints/step-00000280"}
	if err := runlog.AppendIntervention(filepath.Join(root, "runs", "alpha"), iv); err != nil {
		t.Fatal(err)
	}
	var evs []Event
	if err := json.Unmarshal(get(t, ts.URL+"/api/events?run=alpha", 200), &evs); err != nil {
		t.Fatal(err)
	}
	var got []Event
	for _, e := range evs {
		if e.Kind == "intervention" {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].Step != 280 || !strings.Contains(got[0].Title, "rewind-1") {
		t.Fatalf("intervention events: %+v", got)
	}
	for _, want := range []string{"steps 290–310", "LR ×0.5 for 50 steps", "optim.max_grad_norm = 0.2", "loss spike at 300"} {
		if !strings.Contains(got[0].Detail, want) {
			t.Errorf("detail %q lacks %q", got[0].Detail, want)
		}
	}
}
