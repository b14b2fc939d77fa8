package peak

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// EnvCacheDir names the environment variable that overrides the directory
// of the peak cache (tests point it at a temporary directory).
const EnvCacheDir = "KESTREL_CACHE_DIR"

// maxCacheBytes bounds the read of peak.json (a few hundred bytes a key).
const maxCacheBytes = 1 << 20

// cacheVersion is the format of peak.json.
const cacheVersion = 1

// Dir is the directory of kestrel's per-machine cache: $KESTREL_CACHE_DIR,
// else the user's cache directory (os.UserCacheDir) + /kestrel.
func Dir() (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("peak: no user cache directory (set %s): %w", EnvCacheDir, err)
	}
	return filepath.Join(d, "kestrel"), nil
}

// CachePath is the peak cache file in dir.
func CachePath(dir string) string { return filepath.Join(dir, "peak.json") }

// Entry is one cached peak.
type Entry struct {
	GFLOPS     float64   `json:"gflops"`
	MeasuredAt time.Time `json:"measured_at"`
	How        string    `json:"how,omitempty"` // the measurement, e.g. "kestrel bench peak: max of 20 × 250ms"
	Key        Key       `json:"key"`           // the key's parts, for people reading the file
}

// Cache is the content of peak.json: one entry per Key.String().
type Cache struct {
	Version int              `json:"version"`
	Peaks   map[string]Entry `json:"peaks"`
}

// Load reads the cache file at path. A missing file is an empty cache; a
// file that cannot be read or parsed, or that holds a peak that is not a
// positive number, returns an empty cache and an error naming the file;
// so does one that is not a regular file (a FIFO is not waited on) or is
// over 1 MiB.
func Load(path string) (Cache, error) {
	empty := Cache{Version: cacheVersion, Peaks: map[string]Entry{}}
	b, err := fileguard.ReadFile(path, maxCacheBytes) // a FIFO or device is refused, not waited on
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, fmt.Errorf("peak cache: %w", err)
	}
	var c Cache
	if err := json.Unmarshal(b, &c); err != nil {
		return empty, fmt.Errorf("peak cache %s: corrupt: %w", path, err)
	}
	if c.Version != cacheVersion {
		return empty, fmt.Errorf("peak cache %s: version %d, want %d", path, c.Version, cacheVersion)
	}
	for k, e := range c.Peaks {
		if !(e.GFLOPS > 0) || math.IsInf(e.GFLOPS, 0) {
			return empty, fmt.Errorf("peak cache %s: corrupt: peak %q is %v GFLOP/s", path, k, e.GFLOPS)
		}
	}
	if c.Peaks == nil {
		c.Peaks = map[string]Entry{}
	}
	return c, nil
}

// Record stores e as the peak of key in the cache file at path when it is
// higher than the cached one (or, with replace, in any case), creating the
// directory and replacing an unreadable or corrupt file. It returns the
// entry the cache holds afterwards and whether e was written.
func Record(path string, key Key, e Entry, replace bool) (Entry, bool, error) {
	if !(e.GFLOPS > 0) || math.IsInf(e.GFLOPS, 0) {
		return Entry{}, false, fmt.Errorf("peak cache %s: refusing to store %v GFLOP/s", path, e.GFLOPS)
	}
	c, _ := Load(path) // a corrupt file is replaced; Resolve and Bench report it
	k := key.String()
	if old, ok := c.Peaks[k]; ok && old.GFLOPS >= e.GFLOPS && !replace {
		return old, false, nil
	}
	e.Key = key
	c.Peaks[k] = e
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return Entry{}, false, fmt.Errorf("peak cache %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Entry{}, false, fmt.Errorf("peak cache: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return Entry{}, false, fmt.Errorf("peak cache: %w", err)
	}
	return e, true, nil
}
