package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlock"
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

// quarantineLockWait is how long Quarantine waits for another one
// writing the same overlay.
const quarantineLockWait = 30 * time.Second

// QuarantineLockFile is the lock file, in the dataset directory, that
// serialises the read-modify-write of its overlay.
const QuarantineLockFile = "quarantine.lock"

// Quarantine adds the request's documents and shards to the dataset's
// overlay; it returns the overlay's path, the entries added (ones already
// there are skipped) and the entries it now holds. Every entry is checked
// before anything is written (an empty id would make the overlay one the
// loader refuses, stopping every run on the dataset). The read, the
// addition and the atomic install (internal/atomicfile) happen under an
// flock on QuarantineLockFile in the dataset directory, so concurrent
// quarantines each keep their entries. A run directory or any other
// directory that is not a prepared dataset is refused, saying so.
func Quarantine(req QuarantineRequest) (path string, added, total int, err error) {
	if req.Reason == "" {
		return "", 0, 0, errors.New("quarantine: --reason is required (it is recorded with every entry)")
	}
	dir := req.Dataset // resolved by the command (flagx.DataPath)
	if err := checkDataset(req.Dataset, dir); err != nil {
		return "", 0, 0, err
	}
	if err := checkEntries("--docs", req.Docs); err != nil {
		return "", 0, 0, err
	}
	if err := checkEntries("--shards", req.Shards); err != nil {
		return "", 0, 0, err
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
		ids := r.DocIDs(req.Source)
		if err := checkEntries("--from-replay "+req.FromReplay, ids); err != nil {
			return "", 0, 0, err
		}
		docs = append(docs, ids...)
	}
	if len(docs)+len(req.Shards) == 0 {
		return "", 0, 0, errors.New("quarantine: nothing to quarantine (give --docs, --shards or --from-replay)")
	}
	lk, err := runlock.LockFile(filepath.Join(dir, QuarantineLockFile), quarantineLockWait)
	if err != nil {
		return "", 0, 0, fmt.Errorf("quarantine: %w", err)
	}
	defer lk.Release()
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

// checkDataset refuses a directory that is not a prepared dataset: its
// manifest.json must be a dataset manifest (it lists shards), not a run's
// (kestrel train writes one too) nor missing. name is the directory as the
// user gave it.
func checkDataset(name, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return fmt.Errorf("quarantine: %s is not a prepared dataset (want a directory written by kestrel data prepare, with its manifest.json): %w", name, err)
	}
	var m struct {
		Shards     *[]json.RawMessage `json:"shards"`
		ConfigHash string             `json:"config_hash"`
	}
	_ = json.Unmarshal(b, &m) // a manifest that does not decode lists no shards
	_, cerr := os.Stat(rundir.Of(dir).Config())
	switch {
	case m.ConfigHash != "" || cerr == nil:
		return fmt.Errorf("quarantine: %s is a run directory, not a prepared dataset: quarantine takes the dataset the run trains on (its config's data.path, a directory written by kestrel data prepare)", name)
	case m.Shards == nil:
		return fmt.Errorf("quarantine: %s is not a prepared dataset: its manifest.json lists no shards (want a directory written by kestrel data prepare)", name)
	}
	return nil
}

// checkEntries refuses empty document ids or shard names (a stray comma in
// --docs a,,b), which the overlay cannot hold.
func checkEntries(flag string, names []string) error {
	for i, n := range names {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("quarantine: %s: entry %d of %d is empty (a stray comma?); nothing was written", flag, i+1, len(names))
		}
	}
	return nil
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
