// Package evalcfg is the [eval] section: the benchmarks and held-out
// texts run inside the training loop at evaluation steps. internal/train
// decides when they are due, internal/eval runs them; the section sits
// below both so neither imports the other, and config.Config aggregates it.
package evalcfg

import (
	"fmt"
	"slices"
	"strings"
)

// Tasks are the benchmark tasks kestrel knows (internal/eval runs
// them; kestrel eval and the [eval] section name them the same way).
var Tasks = []string{"hellaswag", "piqa", "bpb", "gsm8k-nll", "memorization", "bpb-val"}

// Config is the [eval] section: benchmarks and the user's held-out
// sets run inside the training loop at evaluation steps, their numbers
// written with the evaluation's line of metrics.jsonl (bench/<task>/acc,
// bpb/wiki, bpb/heldout/<name>, …; docs/eval.md).
type Config struct {
	Tasks []string `toml:"tasks" comment:"benchmarks run during training, some of hellaswag, piqa, bpb, gsm8k-nll, memorization, bpb-val (see kestrel eval --help and docs/eval.md); empty = none"`
	Every int      `toml:"every" comment:"run them every N steps, a multiple of train.eval_every, with that evaluation (0 = at every evaluation); always at the last step (the only one when train.eval_every = 0)"`
	Limit int      `toml:"limit" comment:"items per task (windows per text for bpb and bpb-val, documents per split for memorization) so an in-loop evaluation stays short; 0 = all (HellaSwag: 10,042 items)"`
	// Heldout are the user's own held-out texts (Paloma-style domains),
	// scored as bits per byte with the benchmarks: bpb/heldout/<name>.
	Heldout      []HeldoutSet `toml:"heldout" comment:"your own held-out texts, scored as bits per byte with the benchmarks (metric bpb/heldout/<name>) and by kestrel eval --tasks heldout: [{ name = \"legal\", path = \"${KESTREL_DATA}/legal/test.txt\" }]; each a non-empty UTF-8 text file, checked before training starts"`
	HeldoutBytes int          `toml:"heldout_bytes" comment:"bytes scored per held-out set: the file's first N bytes, cut back to a character boundary, so in-loop evaluations stay short (0 = the whole file)"`
}

// HeldoutSet is one user held-out text of the [eval] section.
type HeldoutSet struct {
	Name string `toml:"name" comment:"domain name in the metric bpb/heldout/<name>: letters, digits, '_', '-', '.'"`
	Path string `toml:"path" comment:"the text file; ${KESTREL_DATA} expands to the data directory"`
}

// Default returns the defaults of the [eval] section: no
// in-loop benchmarks, no held-out sets, 32 KiB per held-out set.
func Default() Config { return Config{Limit: 500, HeldoutBytes: 32 << 10} }

// Validate reports unknown tasks and an every that is not a multiple of
// train.eval_every (evalEvery; 0 = only the final evaluation, which runs
// the benchmarks whatever every is).
func (c Config) Validate(evalEvery int) error {
	seen := map[string]bool{}
	for i, t := range c.Tasks {
		if !slices.Contains(Tasks, t) {
			return fmt.Errorf("eval.tasks[%d] = %q: unknown task (want some of %s)", i, t, strings.Join(Tasks, ", "))
		}
		if seen[t] {
			return fmt.Errorf("eval.tasks[%d] = %q: listed twice", i, t)
		}
		seen[t] = true
	}
	if c.Every < 0 || c.Limit < 0 || c.HeldoutBytes < 0 {
		return fmt.Errorf("eval.every, eval.limit and eval.heldout_bytes must be >= 0, got %d, %d and %d", c.Every, c.Limit, c.HeldoutBytes)
	}
	if err := validateHeldout(c.Heldout); err != nil {
		return err
	}
	// with train.eval_every = 0 the only evaluation is the last: the
	// benchmarks run there whatever every says
	if c.Every > 0 && c.Enabled() && evalEvery > 0 && c.Every%evalEvery != 0 {
		return fmt.Errorf("eval.every = %d: must be a multiple of train.eval_every = %d (benchmarks run with an evaluation)", c.Every, evalEvery)
	}
	return nil
}

// Due says whether the evaluation at step s runs the benchmarks (final:
// the run's last evaluation).
func (c Config) Due(s int, final bool) bool {
	return c.Enabled() && (final || c.Every == 0 || s%c.Every == 0)
}

// Enabled says whether the section asks for anything: tasks or held-out
// sets.
func (c Config) Enabled() bool { return len(c.Tasks) > 0 || len(c.Heldout) > 0 }

// Names lists what the benchmarks score: the tasks, then heldout/<name>
// for each held-out set.
func (c Config) Names() []string {
	out := slices.Clone(c.Tasks)
	for _, h := range c.Heldout {
		out = append(out, "heldout/"+h.Name)
	}
	return out
}

// validateHeldout checks the held-out sets' names and that each has a
// path; the files themselves are checked before training starts
// (internal/eval.CheckHeldout).
func validateHeldout(sets []HeldoutSet) error {
	seen := map[string]bool{}
	for i, h := range sets {
		switch {
		case h.Name == "":
			return fmt.Errorf("eval.heldout[%d].name: empty", i)
		case strings.IndexFunc(h.Name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
		}) >= 0:
			return fmt.Errorf("eval.heldout[%d].name = %q: use letters, digits, '_', '-' and '.' (it names the metric bpb/heldout/<name>)", i, h.Name)
		case seen[h.Name]:
			return fmt.Errorf("eval.heldout[%d].name = %q: listed twice", i, h.Name)
		case h.Path == "":
			return fmt.Errorf("eval.heldout[%d] (%s).path: empty", i, h.Name)
		}
		seen[h.Name] = true
	}
	return nil
}
