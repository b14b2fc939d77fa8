package runlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
)

// BranchFile is the record `kestrel branch` writes in a branch's run
// directory: where it came from, what it changed and where it ends. It is
// also the branch directory's marker (a later `kestrel branch --out` may
// replace a directory holding one), and every start of the branch copies
// it into the manifest's parent field.
const BranchFile = rundir.BranchName

// Parent is a branch's origin and change: the run and checkpoint it
// started from, the --set overrides it trains with, and the step it ends
// at.
type Parent struct {
	// Run is the parent's run directory (absolute).
	Run string `json:"run"`
	// Checkpoint is the parent's checkpoint directory the branch started
	// from (absolute), Step its step and TokensSeen its tokens_seen.
	Checkpoint string `json:"checkpoint"`
	Step       int    `json:"step"`
	TokensSeen int64  `json:"tokens_seen"`
	// SumsSHA256 is the sha256 of the checkpoint's SHA256SUMS file: the
	// digest of every tensor and state file the branch resumed from.
	SumsSHA256 string `json:"sha256sums_sha256"`
	// ConfigHash is the parent's config hash (its config.toml as resolved).
	ConfigHash string `json:"parent_config_hash,omitempty"`
	// Set is the change: section.key=value overrides in the order given.
	Set []string `json:"set,omitempty"`
	// Steps is how many steps the branch trains; UntilStep = Step + Steps
	// is its last step (a rerun of kestrel train on the branch stops there).
	Steps     int    `json:"steps"`
	UntilStep int    `json:"until_step"`
	Created   string `json:"created"` // RFC 3339, UTC
}

// WriteBranch writes dir/branch.json atomically.
func WriteBranch(dir string, p *Parent) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", BranchFile, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, BranchFile), append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", BranchFile, err)
	}
	return nil
}

// ReadBranch reads dir/branch.json: (nil, nil) when dir is no branch; an
// error names the file and the field that is wrong.
func ReadBranch(dir string) (*Parent, error) {
	path := filepath.Join(dir, BranchFile)
	b, err := fileguard.ReadFile(path, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("branch: %w", err)
	}
	return ParseBranch(b, path)
}

// ParseBranch decodes a branch.json (name names it in errors) and checks
// the fields a start depends on: the parent run, a step ≥ 0, steps > 0 and
// until_step = step + steps.
func ParseBranch(b []byte, name string) (*Parent, error) {
	var p Parent
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("branch: %s: %w", name, err)
	}
	switch {
	case p.Run == "":
		return nil, fmt.Errorf("branch: %s: run is empty", name)
	case p.Step < 0 || p.Steps <= 0:
		return nil, fmt.Errorf("branch: %s: step %d, steps %d: want step >= 0 and steps > 0", name, p.Step, p.Steps)
	case p.Step > math.MaxInt32 || p.Steps > math.MaxInt32 || p.UntilStep != p.Step+p.Steps:
		return nil, fmt.Errorf("branch: %s: until_step %d is not step %d + steps %d (each at most 2147483647)", name, p.UntilStep, p.Step, p.Steps)
	}
	return &p, nil
}
