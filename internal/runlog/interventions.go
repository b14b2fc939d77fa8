package runlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
)

// InterventionsFile is the run directory's log of interventions (one JSON
// object per line, appended, never rewritten).
const InterventionsFile = rundir.InterventionsName

// Intervention is one rescue of a run, a line of interventions.jsonl:
// `kestrel rewind` rolled the run back from FromStep to the checkpoint of
// ToStep. The trajectory after ToStep is a pure function of the config and
// of the interventions: for every step s > ToStep the batch is
// DataSource.Fill(s−1 + offset), offset being the sum of SkipSteps of the
// interventions whose ToStep is below s; LRScale multiplies the learning
// rate of steps ToStep+1 … ToStep+LRSteps (LRSteps 0: until the next
// intervention takes over, or to the end); Set are config overrides
// (section.key=value) in force from step ToStep+1 on.
type Intervention struct {
	ID       string `json:"id"`        // "rewind-1", "rewind-2" …: unique in the run
	Kind     string `json:"kind"`      // "rewind"
	Time     string `json:"time"`      // RFC 3339, UTC
	FromStep int    `json:"from_step"` // the last step the run had reached
	ToStep   int    `json:"to_step"`   // the checkpoint the run resumes from
	// SkipFrom and SkipTo (1-based, inclusive) name the window of data
	// steps skipped; SkipSteps = SkipTo − SkipFrom + 1 (0: none).
	SkipFrom  int               `json:"skip_from,omitempty"`
	SkipTo    int               `json:"skip_to,omitempty"`
	SkipSteps int               `json:"skip_steps,omitempty"`
	LRScale   float64           `json:"lr_scale,omitempty"` // 0 or 1: no scaling
	LRSteps   int               `json:"lr_steps,omitempty"`
	Set       map[string]string `json:"set,omitempty"` // section.key → value (TOML literal)
	Reason    string            `json:"reason,omitempty"`
	// By says who took the intervention: "auto" for an automatic rollback
	// ([rescue] auto_rollback); empty for a person (kestrel rewind).
	By string `json:"by,omitempty"`
	// Rung is the automatic rescue ladder's rung of an automatic rollback
	// (1: rewind and skip; 2: also a lower LR for the rest of the run and
	// tighter update clipping); 0 for a person.
	Rung int `json:"rung,omitempty"`
	// Trigger is what the automatic rollback acted on (divergence,
	// nan_inf, data_event); a recurrence of the same trigger climbs the
	// ladder.
	Trigger string `json:"trigger,omitempty"`
	// Checkpoint is the checkpoint directory resumed from (relative to the
	// run directory); ArchivedCheckpoints the newer ones moved aside, and
	// MetricsArchive the file that holds the metrics lines after ToStep.
	Checkpoint          string   `json:"checkpoint"`
	ArchivedCheckpoints []string `json:"archived_checkpoints,omitempty"`
	MetricsArchive      string   `json:"metrics_archive,omitempty"`
	ArchivedLines       int      `json:"archived_lines,omitempty"`
}

// Validate checks the fields a reader depends on.
func (iv *Intervention) Validate() error {
	switch {
	case iv.ID == "":
		return fmt.Errorf("intervention: empty id")
	case iv.ToStep < 0:
		return fmt.Errorf("intervention %s: to_step %d is negative", iv.ID, iv.ToStep)
	case iv.SkipSteps < 0:
		return fmt.Errorf("intervention %s: skip_steps %d is negative", iv.ID, iv.SkipSteps)
	case iv.SkipSteps > 0 && iv.SkipTo-iv.SkipFrom+1 != iv.SkipSteps:
		return fmt.Errorf("intervention %s: skip window %d:%d does not hold skip_steps %d", iv.ID, iv.SkipFrom, iv.SkipTo, iv.SkipSteps)
	case iv.LRScale < 0:
		return fmt.Errorf("intervention %s: lr_scale %g is negative", iv.ID, iv.LRScale)
	case iv.LRSteps < 0:
		return fmt.Errorf("intervention %s: lr_steps %d is negative", iv.ID, iv.LRSteps)
	}
	return nil
}

// AppendIntervention appends iv as one line to dir/interventions.jsonl and
// fsyncs it.
func AppendIntervention(dir string, iv *Intervention) error {
	if err := iv.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(iv)
	if err != nil {
		return fmt.Errorf("interventions: %w", err)
	}
	if err := appendLine(filepath.Join(dir, InterventionsFile), b); err != nil {
		return fmt.Errorf("interventions: %w", err)
	}
	return nil
}

// appendLine appends one line (b and a newline) to the log file path,
// creating it, and syncs it: a record is on disk when this returns.
func appendLine(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// ReadInterventions reads dir/interventions.jsonl in order; a missing file
// is no interventions. A line that does not parse or validate is an error
// naming the file and line (the trajectory depends on every line).
func ReadInterventions(dir string) ([]Intervention, error) {
	path := filepath.Join(dir, InterventionsFile)
	data, err := fileguard.ReadFile(path, MaxInterventionsBytes) // a regular file, bounded
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("interventions: %w", err)
	}
	return ParseInterventions(data, path)
}

// Bounds of interventions.jsonl: the whole file and one line.
const (
	MaxInterventionsBytes = 16 << 20
	maxInterventionLine   = 1 << 20
)

// ParseInterventions reads the lines of an interventions.jsonl held in
// data; name names it in errors. A torn last line (no newline: a crash
// while appending) is an error too: the caller must not guess. A line over
// 1 MiB is an error naming it.
func ParseInterventions(data []byte, name string) ([]Intervention, error) {
	return parseStrictLines(data, name, "interventions", maxInterventionLine, (*Intervention).Validate)
}

// parseStrictLines decodes each non-empty line of data (a log named name)
// as one T, refusing unknown fields, a line over maxLine bytes (0: no
// bound) and a value validate refuses; errors name what, the file and the
// line. One reader for the run's append-only logs of records.
func parseStrictLines[T any](data []byte, name, what string, maxLine int, validate func(*T) error) ([]T, error) {
	var out []T
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if maxLine > 0 && len(line) > maxLine {
			return nil, fmt.Errorf("%s: %s:%d: line of %d bytes, over the %d-byte bound", what, name, n+1, len(line), maxLine)
		}
		var v T
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %s:%d: %w", what, name, n+1, err)
		}
		if err := validate(&v); err != nil {
			return nil, fmt.Errorf("%s: %s:%d: %w", what, name, n+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// MetricsArchiveName is the file, beside metrics.jsonl, that holds the
// metrics lines an intervention moved out: metrics.archive-<id>.jsonl, the
// lines byte for byte as they were (readable by the same readers).
func MetricsArchiveName(id string) string { return filepath.Base(rundir.Layout{}.MetricsArchive(id)) }

// ArchiveMetrics moves the lines of dir/metrics.jsonl whose "step" is
// above step into dir/MetricsArchiveName(id), unchanged and in order; a
// torn last line goes there too. Nothing is lost: the archive is written
// and fsynced before metrics.jsonl is replaced (atomically), and an
// existing archive is refused. It returns the number of lines moved.
func ArchiveMetrics(dir string, step int, id string) (moved int, err error) {
	path := rundir.Of(dir).Metrics()
	data, err := fileguard.ReadFile(path, 0) // a regular file only
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("metrics archive: %w", err)
	}
	var keep, move bytes.Buffer
	rec := NewRecord()
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		out := &keep
		if line[len(line)-1] != '\n' {
			out = &move
		} else if ParseLine(bytes.TrimSpace(line), rec) == nil {
			if s, ok := rec.Num("step"); ok && s > float64(step) {
				out = &move
			}
		}
		if out == &move {
			moved++
		}
		out.Write(line)
	}
	if moved == 0 {
		return 0, nil
	}
	apath := filepath.Join(dir, MetricsArchiveName(id))
	if _, err := os.Stat(apath); err == nil {
		return 0, fmt.Errorf("metrics archive: %s already exists", apath)
	}
	if err := atomicfile.WriteFile(apath, move.Bytes()); err != nil {
		return 0, fmt.Errorf("metrics archive: %w", err)
	}
	if err := atomicfile.WriteFile(path, keep.Bytes()); err != nil {
		return 0, fmt.Errorf("metrics archive: %w", err)
	}
	return moved, nil
}

// LastStep is the largest "step" among the lines of the metrics.jsonl at
// path (0 for a missing or empty file).
func LastStep(path string) (int, error) {
	data, err := fileguard.ReadFile(path, 0) // a regular file only
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	last := 0
	rec := NewRecord()
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if ParseLine(bytes.TrimSpace(line), rec) != nil {
			continue
		}
		if s, ok := rec.Num("step"); ok && int(s) > last {
			last = int(s)
		}
	}
	return last, nil
}

// Summary is one line saying what the intervention changed: the skipped
// window, the LR scale, the knobs set and the reason ("" when nothing).
func (iv *Intervention) Summary() string {
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
