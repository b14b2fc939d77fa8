package deptest

import (
	"fmt"
	"slices"
	"strings"
)

// CheckFloors returns one message per breach of the floor table, sorted:
// an import of a package on a higher floor, an import on the same floor
// that sideways does not allow, a package of g that floor does not place,
// and a package that floor places but g does not hold (a stale row). Each
// import message names the importing package, the imported one and both
// floors.
func CheckFloors(g Graph, floor map[string]int, sideways map[Edge]bool) []string {
	var out []string
	for pkg, imps := range g {
		f, ok := floor[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("%s: no floor in the table (place it in docs/architecture.md §0 and in the test's floor table)", pkg))
			continue
		}
		for _, imp := range imps {
			fi, ok := floor[imp]
			switch {
			case !ok:
				// reported once as a package without a floor
			case fi > f:
				out = append(out, fmt.Sprintf("%s (floor %d) imports %s (floor %d): an upward import", pkg, f, imp, fi))
			case fi == f && !sideways[Edge{pkg, imp}]:
				out = append(out, fmt.Sprintf("%s (floor %d) imports %s (floor %d): a same-floor import the table does not allow", pkg, f, imp, fi))
			}
		}
	}
	for pkg, f := range floor {
		if _, ok := g[pkg]; !ok {
			out = append(out, fmt.Sprintf("%s: on floor %d in the table, but there is no such package", pkg, f))
		}
	}
	for e := range sideways {
		if floor[e.From] != floor[e.To] || !slices.Contains(g[e.From], e.To) {
			out = append(out, fmt.Sprintf("%s → %s: allowed as a same-floor import, but it is not one (floors %d and %d, imported: %t)",
				e.From, e.To, floor[e.From], floor[e.To], slices.Contains(g[e.From], e.To)))
		}
	}
	slices.Sort(out)
	return out
}

// Never is a dependency that must not exist, directly or through other
// packages: no package matching From may reach a package matching To. A
// pattern is a package path, or a path ending in "/..." for the package
// and every package below it.
type Never struct{ From, To string }

// Match reports whether pkg matches the pattern pat.
func Match(pat, pkg string) bool {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pat == pkg
}

// CheckNevers returns the dependencies of g that a rule of nevers forbids,
// each naming the rule and the chain of imports that makes it (violations),
// the ones that known excuses (excused: the excuse, the chain), and the
// entries of known that no longer happen (stale: the list can only shrink).
// known is keyed by the package pair, From the importer and To the
// forbidden package reached; all three lists are sorted.
func CheckNevers(g Graph, nevers []Never, known map[Edge]string) (violations, excused, stale []string) {
	used := map[Edge]bool{}
	for _, pkg := range sortedKeys(g) {
		prev := reach(g, pkg)
		for _, n := range nevers {
			if !Match(n.From, pkg) {
				continue
			}
			for _, dep := range sortedKeys(prev) {
				if !Match(n.To, dep) {
					continue
				}
				chain := strings.Join(path(prev, pkg, dep), " → ")
				e := Edge{pkg, dep}
				if why, ok := known[e]; ok {
					if !used[e] {
						excused = append(excused, fmt.Sprintf("%s: %s", why, chain))
					}
					used[e] = true
					continue
				}
				violations = append(violations, fmt.Sprintf("%s must never depend on %s (rule %s ↛ %s): %s", pkg, dep, n.From, n.To, chain))
			}
		}
	}
	for e, why := range known {
		if !used[e] {
			stale = append(stale, fmt.Sprintf("%s → %s no longer happens (%s): remove it from the known exceptions", e.From, e.To, why))
		}
	}
	slices.Sort(violations)
	slices.Sort(excused)
	slices.Sort(stale)
	return violations, excused, stale
}

// reach returns every package pkg depends on, directly or not, each with
// the package it was first reached from in a breadth-first walk (so the
// chain path rebuilds is a shortest one).
func reach(g Graph, pkg string) map[string]string {
	prev := map[string]string{}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, seen := prev[imp]; !seen && imp != pkg {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return prev
}

// path rebuilds the chain of imports from pkg to dep.
func path(prev map[string]string, pkg, dep string) []string {
	chain := []string{dep}
	for p := dep; p != pkg; {
		p = prev[p]
		chain = append(chain, p)
	}
	slices.Reverse(chain)
	return chain
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
