// Package datadir locates kestrel's shipped data (../shared/data, or the
// directory named by $KESTREL_DATA) and expands ${KESTREL_DATA} in paths.
package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Env is the environment variable that points at the data directory.
const Env = "KESTREL_DATA"

// Placeholder is the token in config paths that expands to the data directory.
const Placeholder = "${KESTREL_DATA}"

// Root returns the data directory: $KESTREL_DATA when set, otherwise the
// first shared/data found walking up from the working directory (so both
// the repository root and a package directory under test find ../shared/data).
func Root() (string, error) {
	if d := os.Getenv(Env); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("$%s=%q is not a directory", Env, d)
		}
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared", "data")
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("data directory not found: set $%s or place the data in ../shared/data (searched upwards from %s)", Env, wd)
}

// Expand replaces ${KESTREL_DATA} in p with the data directory. Paths
// without the placeholder are returned unchanged, without looking for data.
func Expand(p string) (string, error) {
	if !strings.Contains(p, Placeholder) {
		return p, nil
	}
	root, err := Root()
	if err != nil {
		return "", fmt.Errorf("expand %q: %w", p, err)
	}
	return strings.ReplaceAll(p, Placeholder, root), nil
}

// Path returns the absolute path of rel inside the data directory, or an
// error naming what is missing. Tests use it to find shipped files.
func Path(rel string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, rel)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("shipped data %s: %w", rel, err)
	}
	return p, nil
}
