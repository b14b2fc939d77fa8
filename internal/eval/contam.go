package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/openrun"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Coverage statuses: whether a task's items could have leaked into the
// run's training data.
const (
	Decontaminated    = "decontaminated"     // the dataset was decontaminated against this file
	NotAnInput        = "not an input"       // a held-out text the data was not built from
	NotDecontaminated = "not decontaminated" // the data was not checked against this eval set
	TrainedOn         = "trained on"         // the eval file itself is a training input
	Unknown           = "unknown"            // the dataset records no provenance (built by an older kestrel)
	RunData           = "run data"           // the task reads the run's own held-out data
)

// Coverage is how one task's eval file relates to the run's training data.
type Coverage struct {
	Task   string `json:"task"`
	File   string `json:"file,omitempty"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// OK reports whether the task's numbers can be trusted not to be inflated
// by leakage.
func (c Coverage) OK() bool {
	return c.Status == Decontaminated || c.Status == NotAnInput || c.Status == RunData
}

// Warning is the loud line for a coverage that is not OK ("" when it is).
func (c Coverage) Warning() string {
	if c.OK() {
		return ""
	}
	return fmt.Sprintf("WARNING %s: %s — %s: its scores may be inflated by training on its items", c.Task, c.Status, c.Detail)
}

// CheckCoverage says, for each task, whether the run's training data could
// contain its items: for a run on a prepared dataset, from the provenance
// its manifest.json records (each source's inputs; the evaluation sets
// decontamination covered, by sha256); for a byte-level run, from the
// data.train and data.val of its config.toml, which no decontamination
// touched.
func CheckCoverage(run string, st checkpoint.State, tasks []string) ([]Coverage, error) {
	return checkCoverage(run, st, tasks, nil)
}

// checkCoverage is CheckCoverage for tasks and the held-out sets (as the
// tasks heldout/<name>: a held-out text must not be a training input).
func checkCoverage(run string, st checkpoint.State, tasks []string, sets []evalcfg.HeldoutSet) ([]Coverage, error) {
	var inputs []string
	var dec *shards.DecontamInfo
	known := true
	where := ""
	if !st.ByteLevel() {
		dir, err := st.DatasetDir()
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", run, err)
		}
		pv, err := DatasetProvenance(dir) // the record the run manifest's decontam/* come from
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", run, err)
		}
		where = "dataset " + dir
		if pv == nil {
			known = false
		} else {
			for _, in := range pv.Inputs {
				inputs = append(inputs, in...)
			}
			dec = pv.Decontam
		}
	} else {
		cp := rundir.Of(run).Config()
		where = "byte-level data of " + cp
		cfg, err := openrun.ReadConfig(cp)
		if err == nil {
			cfg, err = cfg.Resolved()
		}
		if errors.Is(err, fs.ErrNotExist) {
			known = false
		} else if err != nil {
			return nil, fmt.Errorf("run %s (byte-level): %w", run, err)
		}
		for _, p := range []string{cfg.Data.Train, cfg.Data.Val} {
			if p == "" {
				continue
			}
			inputs = append(inputs, p)
		}
	}
	var out []Coverage
	for _, task := range tasks {
		files, err := TaskFiles(task)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", task, err)
		}
		if len(files) == 0 {
			out = append(out, Coverage{Task: task, Status: RunData, Detail: "the run's own held-out data"})
			continue
		}
		c := Coverage{Task: task, File: files[0]}
		c.Status, c.Detail, err = coverageOf(files[0], inputs, dec, known, where, task == "bpb")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", task, err)
		}
		out = append(out, c)
	}
	for _, h := range sets {
		p := h.Path // resolved (the run's config.toml through openrun, a flag through flagx)
		c := Coverage{Task: "heldout/" + h.Name, File: p}
		var err error
		if c.Status, c.Detail, err = coverageOf(p, inputs, dec, known, where, true); err != nil {
			return nil, fmt.Errorf("heldout %s: %w", h.Name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// coverageOf classifies one eval file. heldOutText marks a text (bpb)
// that no decontamination set lists: it is fine as long as it is not an
// input.
func coverageOf(file string, inputs []string, dec *shards.DecontamInfo, known bool, where string, heldOutText bool) (status, detail string, err error) {
	h, err := runlog.HashFile(file)
	if err != nil {
		return "", "", err
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	file = abs(file)
	if dec != nil {
		for _, set := range dec.EvalSets {
			for _, f := range set.Files {
				if f.SHA256 == h {
					return Decontaminated, fmt.Sprintf("%s was decontaminated against eval set %q (%d-grams, mode %s)", where, set.Name, dec.NGram, dec.Mode), nil
				}
			}
		}
	}
	if !known {
		return Unknown, where + " records no provenance (a dataset built before kestrel recorded its inputs and decontamination: rebuild it with kestrel prepare; or a run directory without its config.toml)", nil
	}
	for _, in := range inputs {
		in = abs(in)
		if in == file || strings.HasPrefix(file, strings.TrimSuffix(in, string(filepath.Separator))+string(filepath.Separator)) {
			return TrainedOn, fmt.Sprintf("%s is one of the training inputs of %s", file, where), nil
		}
	}
	if heldOutText {
		return NotAnInput, fmt.Sprintf("%s is not among the inputs of %s", file, where), nil
	}
	if dec == nil {
		return NotDecontaminated, where + " was not decontaminated (prepare.decontam.enabled = false, or a byte-level run)", nil
	}
	return NotDecontaminated, fmt.Sprintf("%s was decontaminated, but not against %s (add it to prepare.decontam.index.eval_sets)", where, file), nil
}
