package checkpoint

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// Checkpoint file names inside checkpoints/step-NNNNNNNN/.
const (
	ModelFile     = "model.safetensors"
	OptimizerFile = "optimizer.safetensors"
	EMAFile       = "ema.safetensors"
	StateFile     = "state.json"
	HFConfigFile  = "config.json"
	SumsFile      = "SHA256SUMS"
	FormatVersion = 1
)

// State is state.json: everything besides tensors that a bit-exact resume needs.
type State struct {
	Format     int    `json:"format"`
	Step       int    `json:"step"`        // optimizer steps completed
	Kind       string `json:"kind"`        // rolling | permanent | final | interrupt | time_limit
	TokensSeen int64  `json:"tokens_seen"` // non-pad target tokens trained on
	// TokensComputed counts every position computed, padding included
	// (what the FLOPs and mfu count); 0 in checkpoints written before it.
	TokensComputed int64   `json:"tokens_computed,omitempty"`
	WallTime       float64 `json:"wall_time"` // training seconds so far
	Created        string  `json:"created"`
	ConfigHash     string  `json:"config_hash"`

	// Data position: batches are a pure function of (seed, step), so the
	// next batch is DataSource.Fill(step = NextFillStep) (0-based, = Step).
	Data struct {
		NextFillStep int    `json:"next_fill_step"`
		Note         string `json:"note"`
	} `json:"data"`
	// RNG: every random stream is keyed by the seed and the step; there is
	// no iterator state to save.
	RNG struct {
		Seed   uint64 `json:"seed"`
		Stream string `json:"stream"`
	} `json:"rng"`
	Schedule struct {
		LR        float64 `json:"lr"`
		Phase     string  `json:"phase"`
		Cycle     int     `json:"cycle"`
		BatchSize int     `json:"batch_size"`
	} `json:"schedule"`

	AdamSteps      int           `json:"adam_steps"`
	UpdateNorms    *optim.Window `json:"update_norm_window"`
	Losses         *optim.Window `json:"skip_loss_window"`
	GradNorms      *optim.Window `json:"skip_grad_norm_window"`
	GradClipWindow []bool        `json:"grad_clip_window"`
	LossEMA        float64       `json:"loss_ema"`
	LossEMASteps   int           `json:"loss_ema_steps"`
	SkippedUpdates int           `json:"skipped_updates"`
	ClippedUpdates int           `json:"clipped_updates"`
	EMABeta        float64       `json:"ema_beta"`

	// Necromancy is the init.necromancy generation whose reset of the Adam
	// moments this state descends from, NecromancyStep the step at which
	// it happened (both 0 = never).
	Necromancy     int `json:"necromancy,omitempty"`
	NecromancyStep int `json:"necromancy_step,omitempty"`

	Model     model.Config     `json:"model"`
	Tokenizer string           `json:"tokenizer"` // "bytes" = byte-level (vocab 256)
	WarmStart *WarmStartReport `json:"warm_start,omitempty"`

	// DataOffset is the data steps skipped by interventions before this
	// step (its batch was DataSource.Fill(Step−1+DataOffset)); Interventions
	// the ids of the interventions.jsonl entries that shaped the run up to
	// it. A resume checks both against the run's interventions log.
	DataOffset    int      `json:"data_offset,omitempty"`
	Interventions []string `json:"interventions,omitempty"`
	// Health is the checkpoint's health when it was written (see Health);
	// nil in checkpoints written before it was recorded: unknown.
	Health *Health `json:"health,omitempty"`
	// Optimizer is the optim.name the optimizer state was written under:
	// "muon" (the matrices' momentum in exp_avg, their exp_avg_sq zero),
	// "nadamw" or "adamc" (AdamW's m and v), empty for AdamW. A start under
	// another optim.name swaps the state (optim.AdamW.SwapState). See
	// OptimizerName and StateOptimizer.
	Optimizer string `json:"optimizer,omitempty"`
	// UpdateNormsRebase: the update-norm window is still to be rescaled to
	// the new optimizer's scale at the next applied step (an optimizer swap
	// to or from Muon whose first step was not yet taken).
	UpdateNormsRebase bool `json:"update_norm_window_rebase,omitempty"`
}

// Payload is what one checkpoint holds.
type Payload struct {
	Tensors      []model.Tensor // the views of the flat buffers below
	Params, M, V []float32      // weights, Adam moments
	EMA          []float32      // nil: the EMA file holds the weights
	State        State
}

// Name is the directory name of the checkpoint after step steps.
func Name(step int) string { return fmt.Sprintf("step-%08d", step) }

func tensorsOf(ts []model.Tensor, buf []float32, suffix string) []safetensors.Tensor {
	out := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		out[i] = safetensors.FromFloat32(t.Name+suffix, t.Shape, buf[t.Offset:t.Offset+t.Size])
	}
	return out
}

// Write writes root/step-NNNNNNNN atomically with
// atomicfile.WriteDir: every file goes into a temporary directory,
// SHA256SUMS is written last, everything is fsynced, the directory is
// renamed into place and the parent fsynced. An existing checkpoint of the
// same step (e.g. Ctrl-C right after a scheduled checkpoint) is replaced
// only after the new one is whole.
func Write(root string, p *Payload) (string, int64, error) {
	name := Name(p.State.Step)
	final := filepath.Join(root, name)
	var total int64
	err := atomicfile.WriteDir(final, func(tmp string) error {
		var err error
		total, err = writeCheckpointFiles(tmp, p)
		return err
	})
	if err != nil {
		return "", 0, &Error{Step: p.State.Step, Dir: final, Err: err}
	}
	return final, total, nil
}

// Error is a checkpoint that could not be saved, or a run
// directory whose checkpoints all failed verification: the monitor's SEV0
// checkpoint_failed. Other errors that merely mention a checkpoint (a failed
// deletion of an old one, an observer's error) are not.
type Error struct {
	Step int    // the step being saved (0 for a failed resume)
	Dir  string // the checkpoint, or the checkpoints/ directory
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("checkpoint %s: %v", e.Dir, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// writeCheckpointFiles writes the files of a checkpoint into dir and
// returns their total size.
func writeCheckpointFiles(dir string, p *Payload) (int64, error) {
	meta := map[string]string{"format": "pt", "step": strconv.Itoa(p.State.Step), "producer": "kestrel"}
	if err := safetensors.WriteFile(filepath.Join(dir, ModelFile), tensorsOf(p.Tensors, p.Params, ""), meta); err != nil {
		return 0, err
	}
	opt := append(tensorsOf(p.Tensors, p.M, ".exp_avg"), tensorsOf(p.Tensors, p.V, ".exp_avg_sq")...)
	if err := safetensors.WriteFile(filepath.Join(dir, OptimizerFile), opt, meta); err != nil {
		return 0, err
	}
	ema := p.EMA
	if ema == nil {
		ema = p.Params
	}
	if err := safetensors.WriteFile(filepath.Join(dir, EMAFile), tensorsOf(p.Tensors, ema, ""), meta); err != nil {
		return 0, err
	}
	st, err := json.MarshalIndent(p.State, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, StateFile), append(st, '\n'), 0o644); err != nil {
		return 0, err
	}
	hf, err := json.MarshalIndent(HFConfig(p.State.Model), "", "  ")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, HFConfigFile), append(hf, '\n'), 0o644); err != nil {
		return 0, err
	}
	var sums strings.Builder
	var total int64
	for _, f := range []string{ModelFile, OptimizerFile, EMAFile, StateFile, HFConfigFile} {
		h, n, err := HashFile(filepath.Join(dir, f))
		if err != nil {
			return 0, err
		}
		total += n
		fmt.Fprintf(&sums, "%s  %s\n", h, f)
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(sums.String()), 0o644); err != nil {
		return 0, err
	}
	return total, nil
}

func HashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Verify checks dir's SHA256SUMS: it must list every checkpoint
// file, and every listed file must exist with the recorded hash. The error
// names the offending file.
func Verify(dir string) error {
	sumsPath := filepath.Join(dir, SumsFile)
	data, err := os.ReadFile(sumsPath)
	if err != nil {
		return fmt.Errorf("%s: %w", sumsPath, err)
	}
	listed := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || len(f[0]) != 64 {
			return fmt.Errorf("%s:%d: malformed line %q", sumsPath, i+1, line)
		}
		listed[f[1]] = f[0]
	}
	for _, need := range []string{ModelFile, OptimizerFile, EMAFile, StateFile} {
		if _, ok := listed[need]; !ok {
			return fmt.Errorf("%s: does not list %s", sumsPath, need)
		}
	}
	names := make([]string, 0, len(listed))
	for n := range listed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		h, _, err := HashFile(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if h != listed[n] {
			return fmt.Errorf("%s: SHA-256 %s does not match %s recorded in %s (corrupt or truncated)", p, h[:12], listed[n][:12], SumsFile)
		}
	}
	return nil
}

// Checkpoint kinds (State.Kind).
var stateKinds = map[string]bool{"rolling": true, "permanent": true, "final": true, "interrupt": true, "time_limit": true}

// rollingKind reports whether the keep policy may delete a checkpoint of
// this kind: interrupt and time_limit checkpoints count as rolling.
func rollingKind(k string) bool { return k == "rolling" || k == "interrupt" || k == "time_limit" }

// validate checks state.json's values before any of them is used (a
// negative step would truncate all of metrics.jsonl): the error names the
// field. DirStep is the step in the checkpoint directory's name, or -1 when
// the directory is not named step-NNNNNNNN.
func (s *State) validate(DirStep int) error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("field %s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Format != FormatVersion:
		return bad("format", "%d, this kestrel reads %d", s.Format, FormatVersion)
	case s.Step < 0:
		return bad("step", "%d is negative", s.Step)
	case DirStep >= 0 && s.Step != DirStep:
		return bad("step", "%d, but the directory is %s", s.Step, Name(DirStep))
	case !stateKinds[s.Kind]:
		return bad("kind", "unknown kind %q (want rolling, permanent, final, interrupt or time_limit)", s.Kind)
	case s.TokensSeen < 0:
		return bad("tokens_seen", "%d is negative", s.TokensSeen)
	case s.Step == 0 && s.TokensSeen != 0:
		return bad("tokens_seen", "%d at step 0", s.TokensSeen)
	case s.WallTime < 0:
		return bad("wall_time", "%g is negative", s.WallTime)
	case s.Data.NextFillStep != s.Step:
		return bad("data.next_fill_step", "%d, want the step %d (batches are a function of the step)", s.Data.NextFillStep, s.Step)
	case s.AdamSteps < 0:
		return bad("adam_steps", "%d is negative", s.AdamSteps)
	case s.LossEMASteps < 0 || s.LossEMASteps > s.Step:
		return bad("loss_ema_steps", "%d is outside [0, step %d]", s.LossEMASteps, s.Step)
	case s.SkippedUpdates < 0 || s.SkippedUpdates > s.Step:
		return bad("skipped_updates", "%d is outside [0, step %d]", s.SkippedUpdates, s.Step)
	case s.ClippedUpdates < 0 || s.ClippedUpdates > s.Step:
		return bad("clipped_updates", "%d is outside [0, step %d]", s.ClippedUpdates, s.Step)
	case len(s.GradClipWindow) > s.Step:
		return bad("grad_clip_window", "%d entries after %d steps", len(s.GradClipWindow), s.Step)
	case s.Schedule.BatchSize < 0:
		return bad("schedule.batch_size", "%d is negative", s.Schedule.BatchSize)
	case s.EMABeta < 0 || s.EMABeta >= 1:
		return bad("ema_beta", "%g is outside [0, 1)", s.EMABeta)
	case s.Necromancy < 0:
		return bad("necromancy", "%d is negative", s.Necromancy)
	case s.NecromancyStep < 0 || s.NecromancyStep > s.Step:
		return bad("necromancy_step", "%d is outside [0, step %d]", s.NecromancyStep, s.Step)
	case s.Health != nil && s.Health.Status != HealthHealthy && s.Health.Status != HealthUnhealthy && s.Health.Status != HealthUnknown:
		return bad("health.status", "unknown status %q (want healthy, unhealthy or unknown)", s.Health.Status)
	}
	return nil
}

// DirStep is the step in a step-NNNNNNNN directory's name, or -1.
func DirStep(dir string) int {
	n, ok := strings.CutPrefix(filepath.Base(dir), "step-")
	if !ok {
		return -1
	}
	s, err := strconv.Atoi(n)
	if err != nil || s < 0 {
		return -1
	}
	return s
}

// Loaded is a verified checkpoint read into memory.
type Loaded struct {
	Dir   string
	State State
	Model *safetensors.File
	Optim *safetensors.File
	EMA   *safetensors.File
}

// Load verifies and reads the checkpoint directory dir. A checkpoint
// that failed its verification after the write (MarkFailed) is refused,
// even when its checksums match (a failed restore test): remove its
// confirmation.json to read it anyway.
func Load(dir string) (*Loaded, error) {
	if err := usable(dir); err != nil {
		return nil, fmt.Errorf("%w (remove %s to load it anyway)", err, ConfirmFile)
	}
	return load(dir)
}

// load verifies and reads dir, whose confirmation.json usable accepted.
func load(dir string) (*Loaded, error) {
	if err := Verify(dir); err != nil {
		return nil, err
	}
	l := &Loaded{Dir: dir}
	sp := filepath.Join(dir, StateFile)
	data, err := os.ReadFile(sp)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &l.State); err != nil {
		return nil, fmt.Errorf("%s: %w", sp, err)
	}
	if err := l.State.validate(DirStep(dir)); err != nil {
		return nil, fmt.Errorf("%s: %w", sp, err)
	}
	if l.Model, err = safetensors.ReadFile(filepath.Join(dir, ModelFile)); err != nil {
		return nil, err
	}
	if l.Optim, err = safetensors.ReadFile(filepath.Join(dir, OptimizerFile)); err != nil {
		return nil, err
	}
	if l.EMA, err = safetensors.ReadFile(filepath.Join(dir, EMAFile)); err != nil {
		return nil, err
	}
	return l, nil
}

// Entry is one step-NNNNNNNN directory.
type Entry struct {
	Step int
	Dir  string
}

// ListDir returns root's checkpoint directories, newest first.
// Temporary directories of interrupted writes are ignored.
func ListDir(root string) ([]Entry, error) {
	ents, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	var out []Entry
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || !strings.HasPrefix(n, "step-") {
			continue
		}
		s, err := strconv.Atoi(strings.TrimPrefix(n, "step-"))
		if err != nil {
			continue
		}
		out = append(out, Entry{Step: s, Dir: filepath.Join(root, n)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step > out[j].Step })
	return out, nil
}

// Latest loads the newest valid checkpoint under root (a
// checkpoints/ directory). Invalid ones are logged naming the bad file and
// skipped (a checkpoint that lacks a file, whose state.json fails
// validation, or that failed its verification after the write, MarkFailed,
// is invalid too); it returns nil, nil when root holds no
// checkpoint at all, and a *Error when checkpoints exist but none
// is valid.
func Latest(root string, log *slog.Logger) (*Loaded, error) {
	list, err := ListDir(root)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	var errs []error
	for _, c := range list {
		err := usable(c.Dir) // without Load's hint to remove confirmation.json
		if err == nil {
			var l *Loaded
			if l, err = load(c.Dir); err == nil {
				return l, nil
			}
		}
		if log != nil {
			log.Warn("rejecting checkpoint, falling back to the previous one", "dir", c.Dir, "err", err)
		}
		errs = append(errs, err)
	}
	return nil, &Error{Dir: root, Err: fmt.Errorf("no valid checkpoint to resume from: %w", errors.Join(errs...))}
}

// ApplyKeepPolicy deletes rolling checkpoints beyond the newest keep ones.
// Permanent, final and unreadable checkpoints are left alone. Interrupt
// and time_limit checkpoints count as rolling. Some rolling checkpoints
// are protected beside the newest keep ones, so that a blow-up never
// leaves only broken checkpoints behind (keepProtected): the newest
// confirmed checkpoint (the last-good one), the pending ones newer than
// it, and the newest checkpoint from before the earliest incident that no
// rescue or person closed yet (Health.UnclosedSince) or that is still open
// at the newest checkpoint (Health.FirstIncident). A checkpoint that
// cannot be deleted is a warning on log, not an error: the new checkpoint
// is safe, and the old one costs only disk space (the next keep policy
// tries again).
func ApplyKeepPolicy(root string, keep int, log *slog.Logger) []string {
	list, err := ListDir(root)
	if err != nil {
		log.Warn("checkpoint keep policy: old checkpoints not deleted", "dir", root, "err", err)
		return nil
	}
	var readable []keepEntry
	for _, c := range list {
		data, err := os.ReadFile(filepath.Join(c.Dir, StateFile))
		if err != nil {
			continue
		}
		var st struct {
			Kind   string  `json:"kind"`
			Health *Health `json:"health"`
		}
		if json.Unmarshal(data, &st) != nil {
			continue
		}
		conf, err := ReadConfirmation(c.Dir)
		if err != nil {
			continue // unreadable: left alone
		}
		readable = append(readable, keepEntry{c, st.Kind, st.Health, StatusOf(st.Health, conf), conf != nil && conf.Verification == VerifyFailed})
	}
	protected := keepProtected(readable)
	var deleted []string
	n := 0
	for _, c := range readable {
		if !rollingKind(c.kind) {
			continue
		}
		switch {
		case c.failed && n < keep:
			continue // failed its verification: not one of the keep, kept as evidence until keep good ones are newer
		case c.failed:
		default:
			n++
			if n <= keep {
				continue
			}
			if why, ok := protected[c.Dir]; ok {
				n-- // kept beside the newest keep ones, not instead of one
				log.Debug("checkpoint keep policy: kept", "path", c.Dir, "why", why)
				continue
			}
		}
		if err := removeCheckpoint(c.Dir); err != nil {
			log.Warn("checkpoint keep policy: could not delete an old checkpoint", "path", c.Dir, "err", err)
			continue
		}
		deleted = append(deleted, filepath.Base(c.Dir))
	}
	return deleted
}

// keepEntry is a readable checkpoint as the keep policy sees it.
type keepEntry struct {
	Entry
	kind   string
	health *Health
	status string
	failed bool // MarkFailed: failed its verification after the write
}

// keepProtected names the checkpoints of readable (newest first) that the
// keep policy must not delete, with why.
func keepProtected(readable []keepEntry) map[string]string {
	protected := map[string]string{}
	if len(readable) == 0 {
		return protected
	}
	for _, c := range readable {
		if c.status == Confirmed {
			protected[c.Dir] = "newest confirmed checkpoint (last-good)"
			break
		}
		if c.status == StatusPending {
			protected[c.Dir] = "pending: newer than last-good, not yet confirmed"
		}
	}
	// before protects the newest checkpoint before step first, and the
	// newest confirmed one before it.
	before := func(first int, why string) {
		newest := true
		for _, c := range readable {
			if c.Step >= first || c.failed {
				continue
			}
			if newest {
				protected[c.Dir], newest = why, false
			}
			if c.status == Confirmed {
				protected[c.Dir] = why + " (confirmed)"
				return
			}
		}
	}
	if first := readable[0].health.FirstIncident(); first > 0 {
		before(first, fmt.Sprintf("newest checkpoint before the incident open since step %d", first))
	}
	if h := readable[0].health; h != nil && h.UnclosedSince > 0 {
		before(h.UnclosedSince, fmt.Sprintf("newest checkpoint before the incident of step %d, kept until a rescue or `kestrel incidents close` closes it", h.UnclosedSince))
	}
	return protected
}

// DeletingPrefix names a checkpoint directory being deleted: it is renamed
// out of the step-NNNNNNNN namespace first, so a deletion cut short (kill -9)
// leaves a hidden directory that RemoveStaleTemps clears, never a
// half-deleted checkpoint.
const DeletingPrefix = ".deleting-"

// removeCheckpoint deletes a checkpoint directory: rename, then remove.
// After a failed rename the checkpoint is whole; after a failed removal it
// is already out of the way and is cleared at the next start.
func removeCheckpoint(dir string) error {
	trash := filepath.Join(filepath.Dir(dir), fmt.Sprintf("%s%s-%d", DeletingPrefix, filepath.Base(dir), time.Now().UnixNano()))
	if err := renameDir(dir, trash); err != nil {
		return err
	}
	if err := removeAll(trash); err != nil {
		return fmt.Errorf("%s renamed to %s but not removed (cleared at the next start): %w", dir, trash, err)
	}
	return nil
}

// renameDir and removeAll are os.Rename and os.RemoveAll; tests replace
// them to make deletions fail (SetDeleteHooks).
var (
	renameDir = os.Rename
	removeAll = os.RemoveAll
)

// SetDeleteHooks replaces the rename and remove the keep policy deletes
// checkpoints with (tests of a trainer whose deletions fail) and returns
// the function that puts os.Rename and os.RemoveAll back.
func SetDeleteHooks(rename func(from, to string) error, remove func(string) error) (restore func()) {
	renameDir, removeAll = rename, remove
	return func() { renameDir, removeAll = os.Rename, os.RemoveAll }
}

// RemoveStaleTemps deletes temporary directories left by interrupted
// writes and deletions.
func RemoveStaleTemps(root string) {
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		n := e.Name()
		if atomicfile.TempDirName(n) || strings.HasPrefix(n, DeletingPrefix) || strings.HasPrefix(n, ".old-") { // .old-: older kestrel
			os.RemoveAll(filepath.Join(root, n))
		}
	}
}

// missingFile names a file a checkpoint directory lacks (state.json,
// SHA256SUMS, a checkpoint file or one SHA256SUMS lists), or "" when none is
// missing. A checkpoint with a missing file was deleted part way (an older
// kestrel's keep policy killed mid-way, or by hand); one whose files are
// all there but differ from their sums is corrupt, which is another matter.
func missingFile(dir string) string {
	need := []string{StateFile, SumsFile, ModelFile, OptimizerFile, EMAFile}
	if data, err := os.ReadFile(filepath.Join(dir, SumsFile)); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				need = append(need, f[1])
			}
		}
	}
	for _, n := range need {
		if _, err := os.Lstat(filepath.Join(dir, n)); errors.Is(err, fs.ErrNotExist) {
			return n
		}
	}
	return ""
}

// RemoveHalfDeleted deletes the checkpoints under root that lack a file
// (see missingFile): they can never be resumed from. It runs once a valid
// checkpoint was found to resume from, in the run directory the trainer
// holds. A permanent or final checkpoint (its state.json says so) is never
// deleted this way, since the keep policy never deletes those: someone
// removed files from it on purpose, so it is left alone with a warning.
func RemoveHalfDeleted(root string, log *slog.Logger) {
	list, err := ListDir(root)
	if err != nil {
		log.Warn("checkpoints: half-deleted checkpoints not cleaned up", "dir", root, "err", err)
		return
	}
	for _, c := range list {
		miss := missingFile(c.Dir)
		if miss == "" {
			continue
		}
		if miss != StateFile {
			var st struct {
				Kind string `json:"kind"`
			}
			data, err := os.ReadFile(filepath.Join(c.Dir, StateFile))
			if err == nil && json.Unmarshal(data, &st) == nil && !rollingKind(st.Kind) {
				log.Warn("checkpoint lacks a file; it is not resumed from, and is left in place because it is "+st.Kind, "path", c.Dir, "missing", miss)
				continue
			}
		}
		if err := removeCheckpoint(c.Dir); err != nil {
			log.Warn("could not remove a half-deleted checkpoint", "path", c.Dir, "missing", miss, "err", err)
			continue
		}
		log.Info("removed a half-deleted checkpoint", "path", c.Dir, "missing", miss)
	}
}

// HFConfig renders a Hugging Face Llama (or Qwen3, with QK-Norm) style
// config.json for the model.
func HFConfig(c model.Config) map[string]any {
	arch, typ := "LlamaForCausalLM", "llama"
	if c.QKNorm {
		arch, typ = "Qwen3ForCausalLM", "qwen3"
	}
	hd := 0
	if c.NHeads > 0 {
		hd = c.DModel / c.NHeads
	}
	return map[string]any{
		"architectures":           []string{arch},
		"model_type":              typ,
		"vocab_size":              c.Vocab,
		"hidden_size":             c.DModel,
		"intermediate_size":       c.MLPHidden,
		"num_hidden_layers":       c.NLayers,
		"num_attention_heads":     c.NHeads,
		"num_key_value_heads":     c.NKVHeads,
		"head_dim":                hd,
		"max_position_embeddings": c.SeqLen,
		"rope_theta":              c.RopeTheta,
		"rms_norm_eps":            c.NormEps,
		"hidden_act":              "silu",
		"tie_word_embeddings":     c.Tied,
		"attention_bias":          false,
		"torch_dtype":             "float32",
		"initializer_range":       c.InitStd,
		"kestrel_nope_every":      c.NoPEEvery,
		"kestrel_z_loss":          c.ZLoss,
		"kestrel_doc_mask":        c.DocMask,
	}
}

func Now() string { return time.Now().UTC().Format(time.RFC3339) }

// StateOptimizer is what State.Optimizer records for the optimizer name in
// force: the name, but "" for AdamW (checkpoints of AdamW runs stay as they
// were before other optimizers existed).
func StateOptimizer(name string) string {
	if name == "adamw" {
		return ""
	}
	return name
}

// OptimizerName is the optim.name a checkpoint's State.Optimizer stands
// for.
func OptimizerName(state string) string {
	if state == "" {
		return "adamw"
	}
	return state
}
