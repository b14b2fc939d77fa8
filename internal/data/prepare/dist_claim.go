package prepare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Phase 1 hands out its units by claims: a rank takes a unit by creating
// claims/<run>/u<N> in the shared work directory exclusively (O_EXCL), so
// every unit is read by exactly one rank. A rank first works through the
// units the size balance gave it (balance), in order, then takes the
// units no rank has started yet from the end of the other ranks' lists
// (the victim works from the front). A rank that is slower — more
// documents per byte in its share, a busier core — thus gets less to do,
// and the ranks finish phase 1 within about one unit of each other. Which
// rank reads a unit changes nothing in the result: a unit's output
// depends only on the unit.

// claimsRoot is the folder of the claim folders in work directory dir.
func claimsRoot(dir string) string { return filepath.Join(dir, "claims") }

// newClaims (rank 0) removes the claims of earlier runs and creates the
// claim folder of this run, named after its temporary output directory.
func newClaims(dir, tmp string) (string, error) {
	root := claimsRoot(dir)
	if err := os.RemoveAll(root); err != nil {
		return "", fmt.Errorf("prepare: remove old claims: %w", err)
	}
	d := filepath.Join(root, filepath.Base(tmp))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("prepare: %w", err)
	}
	return d, nil
}

// claim reports whether this rank took unit u (false: another rank had
// taken it).
func (w *distWork) claim(u int) (bool, error) {
	f, err := os.OpenFile(filepath.Join(w.claims, fmt.Sprintf("u%06d", u)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("prepare: claim unit %d: %w", u, err)
	}
	_, err = fmt.Fprintf(f, "%d %s\n", w.c.Rank(), w.c.Host())
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return false, fmt.Errorf("prepare: claim unit %d: %w", u, err)
	}
	return true, nil
}

// claimOrder is the order in which rank tries to claim the units: its own
// (owner, from balance) ascending, then the others' from the back, the
// last position of every other rank's list first (ranks after this one
// first), then the one before, and so on.
func claimOrder(owner []int, size, rank int) []int {
	lists := make([][]int, size)
	for i, r := range owner {
		lists[r] = append(lists[r], i)
	}
	order := slices.Clone(lists[rank])
	longest := 0
	for _, l := range lists {
		longest = max(longest, len(l))
	}
	for pos := longest - 1; pos >= 0; pos-- {
		for k := 1; k < size; k++ {
			if l := lists[(rank+k)%size]; pos < len(l) {
				order = append(order, l[pos])
			}
		}
	}
	return order
}

// settleOwners makes every rank's claims known to all: owner[i] becomes
// the rank that read unit i and mine this rank's units, ascending.
func (w *distWork) settleOwners(took []int) error {
	b, err := gobBytes(took)
	if err != nil {
		return err
	}
	all, err := w.c.AllGatherBytes(b)
	if err != nil {
		return fmt.Errorf("prepare: exchange claimed units: %w", err)
	}
	owner := make([]int, len(w.units))
	for i := range owner {
		owner[i] = -1
	}
	for r, rb := range all {
		var us []int
		if err := unGob(rb, &us); err != nil {
			return fmt.Errorf("prepare: claimed units of rank %d: %w", r, err)
		}
		for _, u := range us {
			if u < 0 || u >= len(owner) || owner[u] >= 0 {
				return fmt.Errorf("prepare: unit %d claimed twice or out of range (rank %d)", u, r)
			}
			owner[u] = r
		}
	}
	for i, r := range owner {
		if r < 0 {
			return fmt.Errorf("prepare: unit %d (%s) was read by no rank", i, describe(w.units[i]))
		}
	}
	w.owner, w.mine = owner, slices.Sorted(slices.Values(took))
	w.stats.Units, w.stats.InputBytes = len(w.mine), 0
	for _, i := range w.mine {
		w.stats.InputBytes += w.units[i].Bytes
	}
	return nil
}
