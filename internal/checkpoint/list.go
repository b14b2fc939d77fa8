package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/rundir"
)

// Info is one checkpoint of a run as `kestrel checkpoints` lists
// it: what its state.json says, without verifying its tensors.
type Info struct {
	Step       int     `json:"step"`
	TokensSeen int64   `json:"tokens_seen"`
	Kind       string  `json:"kind"`
	Created    string  `json:"created,omitempty"`
	Dir        string  `json:"dir"`
	Bytes      int64   `json:"bytes"` // total size of its files
	Health     *Health `json:"health"`
	// Status is confirmed, pending, rejected, unhealthy or unknown
	// (confirm.go): the health when written, then its confirmation.
	Status       string        `json:"status"`
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	// LastGood marks the newest confirmed checkpoint (see LastGood).
	LastGood bool `json:"last_good"`
	// Err is why state.json could not be read; the other fields but Step,
	// Dir and Bytes are then empty.
	Err string `json:"error,omitempty"`
}

// Root is the checkpoints/ directory of a run directory, or dir
// itself when it is one (it holds step-NNNNNNNN directories and no
// checkpoints/).
func Root(dir string) string {
	root := rundir.Of(dir).Checkpoints()
	if fi, err := os.Stat(root); err == nil && fi.IsDir() {
		return root
	}
	return dir
}

// List lists the checkpoints of a run directory (or of a
// checkpoints/ directory), newest first, with their health as state.json
// records it (unknown when it records none), their confirmation
// (confirmation.json) and status, and the newest confirmed one marked
// LastGood. An unreadable state.json is reported in the row's Err,
// not as an error; a directory that does not exist is an error.
func List(runDir string) ([]Info, error) {
	if _, err := os.Stat(runDir); err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	list, err := ListDir(Root(runDir))
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(list))
	good := false
	for _, c := range list {
		info := Info{Step: c.Step, Dir: c.Dir, Bytes: dirSize(c.Dir)}
		if st, err := ReadState(c.Dir); err != nil {
			info.Err = err.Error()
		} else {
			info.TokensSeen, info.Kind, info.Created, info.Health = st.TokensSeen, st.Kind, st.Created, st.Health
		}
		if info.Health == nil {
			info.Health = &Health{Status: HealthUnknown}
		}
		if info.Err == "" {
			conf, err := ReadConfirmation(c.Dir)
			if err != nil {
				info.Err = err.Error()
			}
			info.Confirmation = conf
			info.Status = StatusOf(info.Health, conf)
		}
		if !good && info.Err == "" && info.Status == Confirmed {
			info.LastGood, good = true, true
		}
		out = append(out, info)
	}
	return out, nil
}

// ReadState reads and validates a checkpoint's state.json (not its sums).
func ReadState(dir string) (*State, error) {
	p := filepath.Join(dir, StateFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := st.validate(DirStep(dir)); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &st, nil
}

// dirSize is the total size of the regular files directly in dir.
func dirSize(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// ErrNoLastGood is returned by LastGood when no checkpoint of the run was
// confirmed healthy.
var ErrNoLastGood = errors.New("no checkpoint was confirmed healthy")

// LastGood is the newest confirmed checkpoint of a run directory: healthy
// when written, its own probe within its band, and the steps after it
// clean (confirm.go). It is the one a rollback restores. Its tensors are
// not verified here (Load does that). It wraps ErrNoLastGood
// when there is none, saying how many checkpoints are in each status.
func LastGood(runDir string) (*Info, error) {
	list, err := List(runDir)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for i := range list {
		if list[i].LastGood {
			return &list[i], nil
		}
		counts[list[i].Status]++
	}
	return nil, fmt.Errorf("%s: %w (%d pending: not yet confirmed by the steps after them, %d rejected, %d unhealthy, %d of unknown health: written with the monitor off or by an older kestrel; name one by step-N)",
		runDir, ErrNoLastGood, counts[StatusPending], counts[Rejected], counts[StatusUnhealthy], counts[StatusUnknown])
}

// LastGoodBefore is the newest confirmed checkpoint of runDir before step
// (its step < step) whose checksums verify: where a rollback for an
// incident whose first bad step is step goes back to. The error says why
// there is none.
func LastGoodBefore(runDir string, step int) (string, error) {
	list, err := List(runDir)
	if err != nil {
		return "", err
	}
	var errs []error
	counts := map[string]int{}
	for _, c := range list {
		if c.Step >= step || c.Err != "" {
			continue
		}
		counts[c.Status]++
		if c.Status != Confirmed {
			continue
		}
		if err := Verify(c.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		return c.Dir, nil
	}
	msg := fmt.Sprintf("%s: no confirmed checkpoint before step %d verifies (%d pending, %d rejected, %d unhealthy, %d of unknown health before it)",
		runDir, step, counts[StatusPending], counts[Rejected], counts[StatusUnhealthy], counts[StatusUnknown])
	if len(errs) > 0 {
		return "", fmt.Errorf("%s: %w", msg, errors.Join(errs...))
	}
	return "", fmt.Errorf("%s: %w", msg, ErrNoLastGood)
}

// Resolve turns a checkpoint name into the checkpoint directory
// of runDir it names:
//
//	last       the newest checkpoint that verifies (state.json and SHA256SUMS)
//	last-good  the newest confirmed checkpoint that verifies (see LastGood)
//	step-N, N  the checkpoint of step N (step-00000070, step-70 or 70)
//	DIR        a checkpoint directory (one holding SHA256SUMS), as a path
//
// last and last-good pass over checkpoints that fail verification (now,
// or after their write: MarkFailed), naming
// them in the error when none is left; a checkpoint named by step or
// directory is verified when it is loaded (Load).
func Resolve(runDir, name string) (string, error) {
	switch name {
	case "":
		return "", errors.New("checkpoint name is empty (want last, last-good, step-N or a checkpoint directory)")
	case "last", "last-good":
		list, err := List(runDir)
		if err != nil {
			return "", err
		}
		var errs []error
		for _, c := range list {
			switch {
			case c.Err != "":
				errs = append(errs, errors.New(c.Err))
				continue
			case name == "last-good" && c.Status != Confirmed:
				continue
			}
			if err := verified(c.Dir); err != nil {
				errs = append(errs, err)
				continue
			}
			return c.Dir, nil
		}
		if name == "last-good" {
			if _, err := LastGood(runDir); err != nil {
				return "", err
			}
			return "", fmt.Errorf("%s: no confirmed checkpoint verifies: %w", runDir, errors.Join(errs...))
		}
		if len(errs) == 0 {
			return "", fmt.Errorf("%s: no checkpoints", runDir)
		}
		return "", fmt.Errorf("%s: no checkpoint verifies: %w", runDir, errors.Join(errs...))
	}
	if n, ok := stepName(name); ok {
		dir := filepath.Join(Root(runDir), Name(n))
		if _, err := os.Stat(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("no checkpoint of step %d: %s does not exist (kestrel checkpoints %s lists them)", n, dir, runDir)
			}
			return "", fmt.Errorf("checkpoint of step %d: %w", n, err)
		}
		return dir, nil
	}
	if _, err := os.Stat(filepath.Join(name, SumsFile)); err == nil {
		return name, nil
	}
	return "", fmt.Errorf("checkpoint %q: not last, last-good, step-N, nor a checkpoint directory (one holding %s)", name, SumsFile)
}

// verified is nil when dir did not fail its verification after the write
// (usable) and its checksums verify now.
func verified(dir string) error {
	if err := usable(dir); err != nil {
		return err
	}
	return Verify(dir)
}

// stepName reads "step-N" or "N" (N ≥ 0, decimal).
func stepName(s string) (int, bool) {
	s = strings.TrimPrefix(s, "step-")
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// NewestValidAtOrBefore returns the newest checkpoint of the run directory
// runDir at or before step limit whose checksums verify and that did not
// fail its verification after the write (every newer or failing one is
// skipped). The error lists why the candidates failed.
func NewestValidAtOrBefore(runDir string, limit int) (string, error) {
	root := Root(runDir)
	list, err := ListDir(root)
	if err != nil {
		return "", err
	}
	var errs []error
	for _, c := range list { // newest first
		if c.Step > limit {
			continue
		}
		if err := verified(c.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		return c.Dir, nil
	}
	msg := fmt.Sprintf("no valid checkpoint at or before step %d in %s", limit, root)
	if len(errs) > 0 {
		return "", fmt.Errorf("%s: %w", msg, errors.Join(errs...))
	}
	return "", errors.New(msg)
}
