package train

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// ArchiveDir is the directory of the run, beside checkpoints/, where a
// rewind moves the checkpoints newer than its target:
// checkpoints-archive/<intervention id>/step-NNNNNNNN. Nothing there is
// read by the trainer; nothing is deleted.
const ArchiveDir = "checkpoints-archive"

// RewindOptions are the choices of one `kestrel rewind`.
type RewindOptions struct {
	// To names the checkpoint to go back to: "last" (the newest valid
	// one), "last-good" (the newest healthy one, see LastGood), a step N (the newest valid checkpoint at or before step N), or
	// a checkpoint directory under the run's checkpoints/.
	To string
	// SkipFrom and SkipTo (1-based, inclusive; 0: none) are the training
	// steps whose batches are skipped: from step SkipFrom on, step s trains
	// on the batch step s+SkipTo−SkipFrom+1 would have used. SkipFrom must
	// be after the checkpoint's step.
	SkipFrom, SkipTo int
	// LRScale multiplies the learning rate of the LRSteps steps after the
	// checkpoint (LRSteps 0: until the next intervention). 0 or 1: none.
	LRScale float64
	LRSteps int
	// Set are config overrides (section.key → value) in force from the
	// checkpoint on; internal/run applies them at every later start.
	// Validated by the caller (a config field that exists, a value of its
	// type).
	Set    map[string]string
	Reason string
	// By is recorded as the intervention's by ("auto" for an automatic
	// rollback; empty for a person).
	By string
	// Lock, when it holds dir, is the caller's lock on the run (an
	// automatic rollback inside a running kestrel train); nil: Rewind
	// takes the lock itself.
	Lock   *runlock.Lock
	Logger *slog.Logger
	// Now stamps the intervention (default time.Now).
	Now func() time.Time
}

// ResolveRewindTarget finds the checkpoint a rewind goes back to under the
// run directory dir (see RewindOptions.To).
func ResolveRewindTarget(dir, to string, log *slog.Logger) (*Loaded, error) {
	root := filepath.Join(dir, "checkpoints")
	list, err := listCheckpoints(root)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("rewind: %s holds no checkpoint", root)
	}
	limit := -1
	switch {
	case to == "last-good":
		d, err := ResolveCheckpoint(dir, to)
		if err != nil {
			return nil, fmt.Errorf("rewind: --to last-good: %w", err)
		}
		l, err := LoadCheckpoint(d)
		if err != nil {
			return nil, fmt.Errorf("rewind: --to last-good: %w", err)
		}
		return l, nil
	case to == "last" || to == "latest":
	case isDigits(to):
		if limit, err = strconv.Atoi(to); err != nil {
			return nil, fmt.Errorf("rewind: --to %s: %w", to, err)
		}
	default:
		abs, err := filepath.Abs(to)
		if err != nil {
			return nil, fmt.Errorf("rewind: --to %s: %w", to, err)
		}
		rootAbs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("rewind: %w", err)
		}
		if filepath.Dir(abs) != rootAbs || dirStep(abs) < 0 {
			return nil, fmt.Errorf("rewind: --to %s: want last, a step, or a step-NNNNNNNN directory of %s", to, root)
		}
		l, err := LoadCheckpoint(abs)
		if err != nil {
			return nil, fmt.Errorf("rewind: --to %s: %w", to, err)
		}
		l.Dir = filepath.Join(root, filepath.Base(abs))
		return l, nil
	}
	for _, c := range list {
		if limit >= 0 && c.Step > limit {
			continue
		}
		l, err := LoadCheckpoint(c.Dir)
		if err == nil {
			return l, nil
		}
		if log != nil {
			log.Warn("rewind: skipping a checkpoint that does not verify", "dir", c.Dir, "err", err)
		}
	}
	return nil, fmt.Errorf("rewind: --to %s: no valid checkpoint at or before it in %s", to, root)
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Rewind prepares the run directory dir to continue from an earlier
// checkpoint: it records the intervention in interventions.jsonl (first,
// so a crash part-way leaves a log the next start checks against), moves
// the metrics lines after the checkpoint's step to
// metrics.archive-<id>.jsonl, and moves the newer checkpoints to
// checkpoints-archive/<id>/. Nothing is deleted. It holds the run's lock
// throughout (a live trainer refuses it). It does not train: the next
// `kestrel train --out dir` resumes from the checkpoint with the
// intervention applied.
func Rewind(dir string, o RewindOptions) (*runlog.Intervention, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	if o.Lock == nil || !o.Lock.Held() || !o.Lock.Holds(dir) {
		lk, err := runlock.Acquire(dir, log)
		if err != nil {
			return nil, fmt.Errorf("rewind: %w", err)
		}
		defer func() {
			if rerr := lk.Release(); rerr != nil {
				log.Warn("rewind: run directory lock", "err", rerr)
			}
		}()
	}
	prev, err := runlog.ReadInterventions(dir)
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	target, err := ResolveRewindTarget(dir, o.To, log)
	if err != nil {
		return nil, err
	}
	to := target.State.Step
	root := filepath.Join(dir, "checkpoints")
	list, err := listCheckpoints(root)
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	from := to
	var newer []ckptEntry
	for _, c := range list {
		if c.Step > to {
			newer = append(newer, c)
			from = max(from, c.Step)
		}
	}
	if last, err := runlog.LastStep(filepath.Join(dir, "metrics.jsonl")); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	} else {
		from = max(from, last)
	}
	iv := &runlog.Intervention{
		ID:         fmt.Sprintf("rewind-%d", len(prev)+1),
		Kind:       "rewind",
		Time:       now().UTC().Format(time.RFC3339),
		FromStep:   from,
		ToStep:     to,
		LRScale:    o.LRScale,
		LRSteps:    o.LRSteps,
		Set:        o.Set,
		Reason:     o.Reason,
		By:         o.By,
		Checkpoint: filepath.Join("checkpoints", filepath.Base(target.Dir)),
	}
	switch {
	case o.SkipFrom == 0 && o.SkipTo == 0:
	case o.SkipFrom <= to:
		return nil, fmt.Errorf("rewind: --skip-steps %d:%d: the window must start after the checkpoint's step %d (its batches were trained on already)", o.SkipFrom, o.SkipTo, to)
	case o.SkipTo < o.SkipFrom:
		return nil, fmt.Errorf("rewind: --skip-steps %d:%d: the window ends before it starts", o.SkipFrom, o.SkipTo)
	default:
		iv.SkipFrom, iv.SkipTo, iv.SkipSteps = o.SkipFrom, o.SkipTo, o.SkipTo-o.SkipFrom+1
	}
	if o.LRScale < 0 || o.LRSteps < 0 {
		return nil, fmt.Errorf("rewind: --lr-scale %g, --lr-steps %d: want values ≥ 0", o.LRScale, o.LRSteps)
	}
	for _, c := range newer {
		iv.ArchivedCheckpoints = append(iv.ArchivedCheckpoints, filepath.Join(ArchiveDir, iv.ID, filepath.Base(c.Dir)))
	}
	iv.MetricsArchive = runlog.MetricsArchiveName(iv.ID)
	if err := runlog.AppendIntervention(dir, iv); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	moved, err := runlog.ArchiveMetrics(dir, to, iv.ID)
	if err != nil {
		return iv, fmt.Errorf("rewind: %s recorded, but: %w", iv.ID, err)
	}
	if len(newer) > 0 {
		adir := filepath.Join(dir, ArchiveDir, iv.ID)
		if err := os.MkdirAll(adir, 0o755); err != nil {
			return iv, fmt.Errorf("rewind: %s recorded, but: %w", iv.ID, err)
		}
		for _, c := range newer {
			if err := os.Rename(c.Dir, filepath.Join(adir, filepath.Base(c.Dir))); err != nil {
				return iv, fmt.Errorf("rewind: %s recorded, but moving %s aside failed (move it to %s by hand): %w", iv.ID, c.Dir, adir, err)
			}
		}
		if err := syncDirs(root, adir); err != nil {
			return iv, fmt.Errorf("rewind: %s: %w", iv.ID, err)
		}
	}
	log.Info("rewound", "id", iv.ID, "to_step", to, "from_step", from, "metrics_lines_archived", moved, "checkpoints_archived", len(newer))
	return iv, nil
}

func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		f, err := os.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	return nil
}
