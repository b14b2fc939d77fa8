package rewind

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// ArchiveDir is the directory of the run, beside checkpoints/, where a
// rewind moves the checkpoints newer than its target:
// checkpoints-archive/<intervention id>/step-NNNNNNNN. Nothing there is
// read by the trainer; nothing is deleted.
const ArchiveDir = rundir.ArchiveName

// Options are the choices of one `kestrel rewind`.
type Options struct {
	// To names the checkpoint to go back to: "last" (the newest valid
	// one), "last-good" (the newest confirmed one, see checkpoint.LastGood), a step N
	// (the newest valid checkpoint at or before step N), a checkpoint
	// directory under the run's checkpoints/, or "init" (Init: the
	// run's initialisation, before step 1).
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
	Set map[string]string
	// SetFlags are `kestrel rewind --set section.key=value` flags, turned
	// into Set by CheckSet (run.CheckRewindSet: a field of the run's
	// config.toml, a value of its type and range) before anything changes.
	SetFlags []string
	CheckSet func(dir string, flags []string) (map[string]string, error)
	// CheckPlan, when set, checks the planned intervention (its checkpoint
	// step known) before anything changes: run.CheckRewindPlan refuses
	// [[optim.phases]] that would change a step already trained.
	CheckPlan func(dir string, iv runlog.Intervention) error
	Reason    string
	// By is recorded as the intervention's by ("auto" for an automatic
	// rollback; empty for a person).
	By string
	// Rung is the automatic rescue ladder's rung (1 or 2; 0 for a person)
	// and Trigger what it acted on.
	Rung    int
	Trigger string
	// Lock, when it holds dir, is the caller's lock on the run (an
	// automatic rollback inside a running kestrel train); nil: Rewind
	// takes the lock itself.
	Lock   *runlock.Lock
	Logger *slog.Logger
	// Now stamps the intervention (default time.Now).
	Now func() time.Time
}

// Init as Options.To rewinds a run to its initialisation
// (step 0): every checkpoint and metrics line is archived, and the next
// start initialises the weights as a fresh run does, with the
// intervention Applied. The rescue ladder takes it for an incident in the
// first steps of a run, before any checkpoint could be confirmed.
const Init = "init"

// ResolveTarget finds the checkpoint a rewind goes back to under the
// run directory dir (see Options.To).
func ResolveTarget(dir, to string, log *slog.Logger) (*checkpoint.Loaded, error) {
	root := rundir.Of(dir).Checkpoints()
	list, err := checkpoint.ListDir(root)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("rewind: %s holds no checkpoint", root)
	}
	limit := -1
	switch {
	case to == "last-good":
		d, err := checkpoint.Resolve(dir, to)
		if err != nil {
			return nil, fmt.Errorf("rewind: --to last-good: %w", err)
		}
		l, err := checkpoint.Load(d)
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
		if filepath.Dir(abs) != rootAbs || checkpoint.DirStep(abs) < 0 {
			return nil, fmt.Errorf("rewind: --to %s: want last, a step, or a step-NNNNNNNN directory of %s", to, root)
		}
		l, err := checkpoint.Load(abs)
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
		l, err := checkpoint.Load(c.Dir)
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

// PendingFile is the run directory's record of a rewind in progress:
// Rewind installs the intervention there (atomically) before it moves
// anything, and removes it once the intervention is in interventions.jsonl.
// A crash in between leaves it behind; Complete (called by the next
// Rewind and, through internal/run, by the next start of kestrel train)
// finishes that rewind from it, so interventions.jsonl never names an
// archive that does not exist and no rewind is half Applied.
const PendingFile = rundir.RewindPendingName

// rewindHook, when set (tests), is called after each stage of a rewind
// ("pending", "metrics", "checkpoints", "recorded"); an error stops the
// rewind there, as a crash would.
var rewindHook func(stage string) error

// SetStageHook sets the function called after each stage of a rewind
// (tests of a crash at each stage; nil: none).
func SetStageHook(hook func(stage string) error) { rewindHook = hook }

func rewindStage(stage string) error {
	if rewindHook == nil {
		return nil
	}
	return rewindHook(stage)
}

// Rewind prepares the run directory dir to continue from an earlier
// checkpoint. In an order that a crash at any point cannot break, it
// installs the intervention as PendingFile, moves the metrics lines
// after the checkpoint's step to metrics.archive-<id>.jsonl, moves the
// newer checkpoints to checkpoints-archive/<id>/, appends the intervention
// to interventions.jsonl and removes the pending file. Nothing is deleted.
// A rewind an earlier crash left half done is completed first. It holds
// the run's lock throughout (a live trainer refuses it). It does not
// train: the next `kestrel train --out dir` resumes from the checkpoint
// with the intervention Applied.
func Rewind(dir string, o Options) (*runlog.Intervention, error) {
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
	if len(o.SetFlags) > 0 {
		if o.CheckSet == nil {
			return nil, fmt.Errorf("rewind: --set %v: no checker of the run's config was given", o.SetFlags)
		}
		set, err := o.CheckSet(dir, o.SetFlags)
		if err != nil {
			return nil, fmt.Errorf("rewind: %w", err)
		}
		o.Set = set
	}
	lk := o.Lock
	if lk == nil || !lk.Held() || !lk.Holds(dir) {
		var err error
		if lk, err = runlock.Acquire(dir, log); err != nil {
			return nil, fmt.Errorf("rewind: %w", err)
		}
		defer func() {
			if rerr := lk.Release(); rerr != nil {
				log.Warn("rewind: run directory lock", "err", rerr)
			}
		}()
	}
	if _, err := Complete(dir, lk, log); err != nil {
		return nil, err
	}
	iv, err := planRewind(dir, o, now(), log)
	if err != nil {
		return nil, err
	}
	if o.CheckPlan != nil && len(iv.Set) > 0 {
		if err := o.CheckPlan(dir, *iv); err != nil {
			return nil, fmt.Errorf("rewind: %w", err)
		}
	}
	if err := writePending(dir, iv); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	if err := rewindStage("pending"); err != nil {
		return nil, fmt.Errorf("rewind: %s left half done (%w); the next kestrel rewind or kestrel train completes it", iv.ID, err)
	}
	if err := finishRewind(dir, iv, log); err != nil {
		return nil, fmt.Errorf("rewind: %s left half done (%w); the next kestrel rewind or kestrel train completes it", iv.ID, err)
	}
	log.Info("rewound", "id", iv.ID, "to_step", iv.ToStep, "from_step", iv.FromStep, "metrics_lines_archived", iv.ArchivedLines, "checkpoints_archived", len(iv.ArchivedCheckpoints))
	return iv, nil
}

// planRewind works out the intervention of a rewind of dir (nothing is
// written): its target, the steps it rewinds, the skip window checked
// against the run's earlier interventions, and the archives it will fill.
func planRewind(dir string, o Options, now time.Time, log *slog.Logger) (*runlog.Intervention, error) {
	prev, err := runlog.ReadInterventions(dir)
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	to, ckName := 0, Init
	if o.To != Init {
		target, err := ResolveTarget(dir, o.To, log)
		if err != nil {
			return nil, err
		}
		to, ckName = target.State.Step, filepath.Join(rundir.CheckpointsName, filepath.Base(target.Dir))
	}
	list, err := checkpoint.ListDir(rundir.Of(dir).Checkpoints())
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	from := to
	var newer []checkpoint.Entry
	for _, c := range list {
		if c.Step > to {
			newer = append(newer, c)
			from = max(from, c.Step)
		}
	}
	last, err := runlog.LastStep(rundir.Of(dir).Metrics())
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	iv := &runlog.Intervention{
		ID:         freeRewindID(dir, prev),
		Kind:       "rewind",
		Time:       now.UTC().Format(time.RFC3339),
		FromStep:   max(from, last),
		ToStep:     to,
		LRScale:    o.LRScale,
		LRSteps:    o.LRSteps,
		Set:        o.Set,
		Reason:     o.Reason,
		By:         o.By,
		Rung:       o.Rung,
		Trigger:    o.Trigger,
		Checkpoint: ckName,
	}
	if o.SkipFrom != 0 || o.SkipTo != 0 {
		if err := CheckSkipWindow(o.SkipFrom, o.SkipTo, to); err != nil {
			return nil, fmt.Errorf("rewind: --skip-steps: %w", err)
		}
		iv.SkipFrom, iv.SkipTo, iv.SkipSteps = o.SkipFrom, o.SkipTo, o.SkipTo-o.SkipFrom+1
		if _, err := Check(append(slices.Clone(prev), *iv)); err != nil {
			return nil, fmt.Errorf("rewind: --skip-steps %d:%d: %w", o.SkipFrom, o.SkipTo, err)
		}
	}
	if o.LRScale < 0 || o.LRSteps < 0 || math.IsNaN(o.LRScale) || math.IsInf(o.LRScale, 0) {
		return nil, fmt.Errorf("rewind: --lr-scale %g, --lr-steps %d: want finite values ≥ 0", o.LRScale, o.LRSteps)
	}
	for _, c := range newer {
		iv.ArchivedCheckpoints = append(iv.ArchivedCheckpoints, filepath.Join(ArchiveDir, iv.ID, filepath.Base(c.Dir)))
	}
	iv.MetricsArchive = runlog.MetricsArchiveName(iv.ID)
	return iv, iv.Validate()
}

// freeRewindID is rewind-N for the next N after the run's interventions,
// skipping an id whose archives exist already (left by a rewind of an
// older kestrel that crashed before it recorded itself).
func freeRewindID(dir string, prev []runlog.Intervention) string {
	for n := len(prev) + 1; ; n++ {
		id := fmt.Sprintf("rewind-%d", n)
		taken := slices.ContainsFunc(prev, func(iv runlog.Intervention) bool { return iv.ID == id })
		for _, p := range []string{filepath.Join(dir, runlog.MetricsArchiveName(id)), filepath.Join(dir, ArchiveDir, id)} {
			if _, err := os.Lstat(p); err == nil {
				taken = true
			}
		}
		if !taken {
			return id
		}
	}
}

// writePending installs iv as the run's PendingFile.
func writePending(dir string, iv *runlog.Intervention) error {
	b, err := json.Marshal(iv)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, PendingFile), append(b, '\n'))
}

// finishRewind carries out the pending rewind iv: each step is skipped
// when a crash left it done already, so it serves Rewind and Complete
// alike. The intervention is recorded last, naming only the archives that
// exist, and the pending file removed after it.
func finishRewind(dir string, iv *runlog.Intervention, log *slog.Logger) error {
	moved, err := archiveMetricsOnce(dir, iv, log)
	if err != nil {
		return err
	}
	iv.ArchivedLines = moved
	if moved == 0 {
		iv.MetricsArchive = ""
	}
	if err := rewindStage("metrics"); err != nil {
		return err
	}
	if iv.ArchivedCheckpoints, err = archiveCheckpointsOnce(dir, iv, log); err != nil {
		return err
	}
	if err := rewindStage(rundir.CheckpointsName); err != nil {
		return err
	}
	if err := runlog.AppendIntervention(dir, iv); err != nil {
		return err
	}
	if err := rewindStage("recorded"); err != nil {
		return err
	}
	return removePending(dir)
}

// archiveMetricsOnce moves the metrics lines after iv.ToStep to iv's
// archive and returns how many lines the archive holds. When the archive
// exists already (a crash after it was installed), lines still in
// metrics.jsonl are moved to a second archive, which is dropped when it
// holds the same bytes and else kept, with a warning: nothing is lost.
func archiveMetricsOnce(dir string, iv *runlog.Intervention, log *slog.Logger) (int, error) {
	apath := filepath.Join(dir, runlog.MetricsArchiveName(iv.ID))
	old, err := os.ReadFile(apath)
	if errors.Is(err, fs.ErrNotExist) {
		return runlog.ArchiveMetrics(dir, iv.ToStep, iv.ID)
	}
	if err != nil {
		return 0, fmt.Errorf("metrics archive: %w", err)
	}
	redo := iv.ID + "-redo"
	moved, err := runlog.ArchiveMetrics(dir, iv.ToStep, redo)
	if err != nil || moved == 0 {
		return lineCount(old), err
	}
	rpath := filepath.Join(dir, runlog.MetricsArchiveName(redo))
	again, err := os.ReadFile(rpath)
	if err == nil && bytes.Equal(again, old) {
		return lineCount(old), os.Remove(rpath)
	}
	log.Warn("rewind: the metrics lines moved on completing the rewind differ from its archive; both are kept", "id", iv.ID, "archive", apath, "second_archive", rpath)
	return lineCount(old), nil
}

func lineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// archiveCheckpointsOnce moves the checkpoints iv names to its archive
// directory, those not moved yet, and returns the archived ones that exist.
func archiveCheckpointsOnce(dir string, iv *runlog.Intervention, log *slog.Logger) ([]string, error) {
	if len(iv.ArchivedCheckpoints) == 0 {
		return nil, nil
	}
	root, adir := rundir.Of(dir).Checkpoints(), rundir.Of(dir).CheckpointsArchive(iv.ID)
	if err := os.MkdirAll(adir, 0o755); err != nil {
		return nil, err
	}
	var done []string
	for _, rel := range iv.ArchivedCheckpoints {
		dst := filepath.Join(dir, rel)
		src := filepath.Join(root, filepath.Base(rel))
		if _, err := os.Lstat(dst); err == nil {
			done = append(done, rel)
			continue
		}
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			log.Warn("rewind: a checkpoint to archive is neither in checkpoints/ nor in the archive", "id", iv.ID, "checkpoint", filepath.Base(rel))
			continue
		}
		if err := os.Rename(src, dst); err != nil {
			return nil, fmt.Errorf("moving %s aside failed (move it to %s by hand): %w", src, adir, err)
		}
		done = append(done, rel)
	}
	if err := syncDirs(root, adir); err != nil {
		return nil, err
	}
	return done, nil
}

func removePending(dir string) error {
	if err := os.Remove(filepath.Join(dir, PendingFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDirs(dir)
}

// Complete finishes a rewind that a crash (or an error) left half
// done in the run directory dir — its PendingFile is there — and
// returns it (nil when there was none). A torn last line of
// interventions.jsonl (a crash while it was appended) is dropped: it is the
// pending intervention's, which is then appended whole. It logs a warning
// naming the rewind. It takes dir's lock unless lk holds it.
func Complete(dir string, lk *runlock.Lock, log *slog.Logger) (*runlog.Intervention, error) {
	if log == nil {
		log = slog.Default()
	}
	path := filepath.Join(dir, PendingFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	if lk == nil || !lk.Held() || !lk.Holds(dir) {
		if lk, err = runlock.Acquire(dir, log); err != nil {
			return nil, fmt.Errorf("rewind: completing the rewind %s records: %w", path, err)
		}
		defer func() {
			if rerr := lk.Release(); rerr != nil {
				log.Warn("rewind: run directory lock", "err", rerr)
			}
		}()
	}
	iv := &runlog.Intervention{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(iv); err != nil {
		return nil, fmt.Errorf("rewind: %s: %w", path, err)
	}
	if err := iv.Validate(); err != nil {
		return nil, fmt.Errorf("rewind: %s: %w", path, err)
	}
	if err := dropTornIntervention(dir, log); err != nil {
		return nil, err
	}
	prev, err := runlog.ReadInterventions(dir)
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	if slices.ContainsFunc(prev, func(p runlog.Intervention) bool { return p.ID == iv.ID }) {
		return iv, removePending(dir) // recorded; only the pending file was left
	}
	log.Warn("rewind: completing a rewind that was left half done (crash or error)", "id", iv.ID, "to_step", iv.ToStep, "file", path)
	if err := finishRewind(dir, iv, log); err != nil {
		return nil, fmt.Errorf("rewind: completing %s from %s: %w", iv.ID, path, err)
	}
	return iv, nil
}

// dropTornIntervention removes a torn last line from dir's
// interventions.jsonl (called only with a rewind pending, whose append the
// torn line was).
func dropTornIntervention(dir string, log *slog.Logger) error {
	path := filepath.Join(dir, runlog.InterventionsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || len(b) == 0 || b[len(b)-1] == '\n' {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	keep := b[:bytes.LastIndexByte(b, '\n')+1]
	log.Warn("rewind: dropping the torn last line of interventions.jsonl (the pending rewind's, appended again whole)", "file", path, "bytes", len(b)-len(keep))
	if err := atomicfile.WriteFile(path, keep); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	return nil
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
