package prepare

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// checkOut refuses an --out that prepare must not replace: a file, a
// symbolic link, or a non-empty directory that is not a dataset kestrel
// prepared (no report.json or manifest.json in it). fileguard owns the
// rule; there is no override (--force rebuilds a dataset, it does not
// replace the user's directory).
func checkOut(out string) error {
	g := fileguard.Dir{Path: out, What: "dataset", Markers: []string{datareport.FileName, "manifest.json"}}
	if err := g.Check(); err != nil {
		return fmt.Errorf("prepare: --out: %w", err)
	}
	return nil
}
