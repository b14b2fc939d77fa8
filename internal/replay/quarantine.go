package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// QuarantineRequest is what kestrel quarantine adds to a dataset's overlay.
type QuarantineRequest struct {
	// Dataset is the prepared dataset directory; the overlay is its
	// quarantine.json (loader.QuarantineFile).
	Dataset string
	// Docs are document ids; Shards shard files (as in the dataset
	// manifest, or their base names).
	Docs, Shards []string
	// FromReplay is the JSON written by kestrel replay --json: every
	// document of its replayed steps (only those from Source when it is set)
	// is added.
	FromReplay string
	// Source restricts the documents to one source.
	Source string
	// Reason is recorded with every entry (required).
	Reason string
	// Now is the time recorded (zero = time.Now()).
	Now time.Time
}

// Quarantine adds the request's documents and shards to the dataset's
// overlay, installed atomically; it returns the overlay's path, the entries
// added (ones already there are skipped) and the entries it now holds.
func Quarantine(req QuarantineRequest) (path string, added, total int, err error) {
	if req.Reason == "" {
		return "", 0, 0, errors.New("quarantine: --reason is required (it is recorded with every entry)")
	}
	dir, err := datadir.Expand(req.Dataset)
	if err != nil {
		return "", 0, 0, fmt.Errorf("quarantine: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		return "", 0, 0, fmt.Errorf("quarantine: %s is not a prepared dataset: %w", req.Dataset, err)
	}
	docs := append([]string(nil), req.Docs...)
	if req.FromReplay != "" {
		b, err := os.ReadFile(req.FromReplay)
		if err != nil {
			return "", 0, 0, fmt.Errorf("quarantine: --from-replay: %w", err)
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return "", 0, 0, fmt.Errorf("quarantine: --from-replay %s: %w", req.FromReplay, err)
		}
		docs = append(docs, r.DocIDs(req.Source)...)
	}
	if len(docs)+len(req.Shards) == 0 {
		return "", 0, 0, errors.New("quarantine: nothing to quarantine (give --docs, --shards or --from-replay)")
	}
	path = filepath.Join(dir, loader.QuarantineFile)
	q, err := loader.ReadQuarantine(path)
	if err != nil {
		return "", 0, 0, err
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	added = q.Add(docs, req.Shards, req.Source, req.Reason, now)
	if added > 0 {
		if err := loader.WriteQuarantine(path, q); err != nil {
			return "", 0, 0, err
		}
	}
	return path, added, len(q.Entries), nil
}

// DocIDs lists the distinct document ids of the replayed steps' rows, in
// order of first appearance; source, when set, keeps only that source's.
func (r *Result) DocIDs(source string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.Steps {
		for _, row := range s.Rows {
			if source != "" && row.Source != source {
				continue
			}
			for _, d := range row.Docs {
				if !seen[d.ID] {
					seen[d.ID] = true
					out = append(out, d.ID)
				}
			}
		}
	}
	return out
}
