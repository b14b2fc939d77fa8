package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// stateOptimizer is what checkpoint.State.Optimizer records for c: "muon" under
// optim.name = "muon", else "" (AdamW; checkpoints of AdamW runs stay as
// they were).
func stateOptimizer(c optim.Config) string {
	if c.Name == "muon" {
		return "muon"
	}
	return ""
}

// checkOptimizer refuses optimizer state written under the other
// optimizer: a Muon momentum buffer (≈ Σ μᵏ·G, with V zero) read as Adam's
// first moment would blow up AdamW's first step, and Adam's moments are
// not Muon's buffer.
func checkOptimizer(dir string, s checkpoint.State, c optim.Config) error {
	have, want := s.Optimizer, stateOptimizer(c)
	if have == want {
		return nil
	}
	name := func(x string) string {
		if x == "" {
			return "adamw"
		}
		return x
	}
	return fmt.Errorf("optim.name = %q, but checkpoint %s holds %s optimizer state: set optim.name = %q, or start from its weights alone (init.from with init.mode = \"weights\")",
		name(want), dir, name(have), name(have))
}
