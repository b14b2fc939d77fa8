package runlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
)

// IncidentClosuresFile is the run directory's log of incidents a person
// closed (`kestrel incidents close`): one JSON object per line, appended.
// A rescue closes an incident by abandoning the trajectory it happened in
// (interventions.jsonl); this file holds the other closures.
const IncidentClosuresFile = rundir.IncidentsClosedName

// IncidentClosure closes the model incident ID: every SEV0/SEV1 model
// alert of the run at steps FromStep … ToStep (inclusive) counts as
// resolved, so the keep policy no longer holds a checkpoint from before it.
type IncidentClosure struct {
	ID       string `json:"id"` // "inc-<first step>"
	FromStep int    `json:"from_step"`
	ToStep   int    `json:"to_step"`
	Time     string `json:"time"` // RFC 3339, UTC
	Reason   string `json:"reason"`
	By       string `json:"by,omitempty"`
}

// Validate checks the fields a reader depends on.
func (c *IncidentClosure) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("incident closure: empty id")
	case c.FromStep < 1 || c.ToStep < c.FromStep:
		return fmt.Errorf("incident closure %s: steps %d-%d: want 1 <= from_step <= to_step", c.ID, c.FromStep, c.ToStep)
	case c.Reason == "":
		return fmt.Errorf("incident closure %s: a reason is required", c.ID)
	}
	return nil
}

// Covers reports whether the closure resolves an alert at step.
func (c *IncidentClosure) Covers(step int64) bool {
	return step >= int64(c.FromStep) && step <= int64(c.ToStep)
}

// maxClosuresBytes bounds incidents-closed.jsonl.
const maxClosuresBytes = 4 << 20

// AppendIncidentClosure appends c to dir's incidents-closed.jsonl (synced).
func AppendIncidentClosure(dir string, c *IncidentClosure) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("incidents: %w", err)
	}
	path := filepath.Join(dir, IncidentClosuresFile)
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("incidents: %s is not a regular file", path)
	}
	if err := appendLine(path, b); err != nil {
		return fmt.Errorf("incidents: %w", err)
	}
	return nil
}

// ReadIncidentClosures reads dir's incidents-closed.jsonl; a missing file
// is no closures. A line that does not parse or validate is an error
// naming the file and line.
func ReadIncidentClosures(dir string) ([]IncidentClosure, error) {
	path := filepath.Join(dir, IncidentClosuresFile)
	data, err := fileguard.ReadFile(path, maxClosuresBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("incidents: %w", err)
	}
	return ParseIncidentClosures(data, path)
}

// ParseIncidentClosures reads the lines of an incidents-closed.jsonl held
// in data; name names it in errors (file:line).
func ParseIncidentClosures(data []byte, name string) ([]IncidentClosure, error) {
	return parseStrictLines(data, name, "incidents", 0, (*IncidentClosure).Validate)
}
