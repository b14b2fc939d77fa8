package dashboard

import (
	"errors"
	"io/fs"
	"net/http"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Samples is the answer of /api/samples: the generations a run recorded
// at its checkpoints (samples.jsonl, [samples]) in file order, and the
// lines that could not be read. The web UI lays them out as a table,
// one row per checkpoint and one column per prompt.
type Samples struct {
	Run         string              `json:"run"`
	Generations []runlog.Generation `json:"generations"`
	Skipped     int                 `json:"skipped,omitempty"`
	FirstBad    string              `json:"first_bad,omitempty"`
}

// handleSamples answers GET /api/samples?run=NAME. A run without
// samples.jsonl has none (not an error); a samples.jsonl that cannot be
// read (not a regular file, too large) is a 500 naming it.
func (s *Server) handleSamples(w http.ResponseWriter, req *http.Request) {
	r, err := s.run(req.URL.Query().Get("run"))
	if err != nil {
		httpError(w, http.StatusNotFound, err)
		return
	}
	out := Samples{Run: r.Name, Generations: []runlog.Generation{}}
	b, err := r.root.readFile(runlog.SamplesFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		httpError(w, http.StatusInternalServerError, err)
		return
	default:
		gs, skipped, bad := runlog.ParseGenerations(b, runlog.SamplesFile)
		if gs != nil {
			out.Generations = gs
		}
		out.Skipped, out.FirstBad = skipped, bad
	}
	writeJSON(w, out)
}
