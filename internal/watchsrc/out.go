package watchsrc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlock"
)

// MarkerFile marks a directory as kestrel watch's output (--out): its
// source and start time. A later watch replaces the records of a directory
// that carries it; a directory without it is written only when it is new
// or empty (or --overwrite, and then never when it holds a run's records).
const MarkerFile = "watch.json"

// runRecords are the files whose presence makes a directory a run's (a
// trainer's or another tool's): watch never writes beside them.
var runRecords = []string{rundir.MetricsName, rundir.AlertsName, rundir.ManifestName, rundir.StoreName, rundir.InterventionsName, rundir.CheckpointsName, rundir.LockName}

// watchRecords are the files a watch writes into --out and a later watch
// replaces.
var watchRecords = []string{rundir.MetricsName, rundir.AlertsName}

// sqliteMagic starts every SQLite database: an existing --store must be one.
const sqliteMagic = "SQLite format 3\x00"

// prepareOut makes out ready for the watch of src: it refuses the source
// itself (out holds src, or src is a directory holding out), a path that is
// not a directory or is a symbolic link, a directory that holds another
// run's records or a live run's lock (whatever overwrite says), and any
// other non-empty directory without MarkerFile unless overwrite. It then
// takes out's run lock (held until the watch ends: a trainer or a second
// watch is refused meanwhile), removes an earlier watch's records and
// writes the marker.
func prepareOut(src, out string, overwrite bool, log *slog.Logger) (*runlock.Lock, error) {
	if err := notSource(src, out); err != nil {
		return nil, err
	}
	g := fileguard.Dir{Path: out, What: "watch output", Markers: []string{MarkerFile}, Overwrite: overwrite, Flag: "--overwrite"}
	if err := g.Check(); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	marked := fileguard.HasMarker(out, MarkerFile)
	if !marked {
		for _, r := range runRecords {
			if _, err := os.Lstat(filepath.Join(out, r)); err == nil {
				return nil, fmt.Errorf("--out %s holds another run's records (%s); kestrel watch never writes into a run: choose a new directory", out, r)
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	lock, err := runlock.Acquire(out, log)
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", out, err)
	}
	if err := resetOut(src, out); err != nil {
		lock.Release()
		return nil, err
	}
	return lock, nil
}

// notSource refuses an out that holds the source or lies inside a source
// directory.
func notSource(src, out string) error {
	if fileguard.Within(src, out) {
		return fmt.Errorf("--out %s holds the source being watched (%s); kestrel watch never writes over what it reads: choose another directory", out, src)
	}
	if st, err := os.Stat(src); err == nil && st.IsDir() && fileguard.Within(out, src) {
		return fmt.Errorf("--out %s is inside the source being watched (%s); choose a directory outside it", out, src)
	}
	return nil
}

// resetOut removes an earlier watch's records from out (a link is removed,
// never followed) and writes the marker naming src.
func resetOut(src, out string) error {
	for _, r := range watchRecords {
		p := filepath.Join(out, r)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && st.IsDir() {
			err = fmt.Errorf("is a directory")
		}
		if err == nil {
			err = os.Remove(p)
		}
		if err != nil {
			return fmt.Errorf("--out: the earlier watch's %s: %w", p, err)
		}
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		abs = src
	}
	b, err := json.MarshalIndent(map[string]string{"source": abs, "started": time.Now().UTC().Format(time.RFC3339), "by": "kestrel watch"}, "", "  ")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(out, MarkerFile), append(b, '\n')); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// checkStore refuses a --store that is the source or inside a source
// directory, a link, a non-regular file, an existing file that is not an
// SQLite database, or an existing store of a run (its directory holds a
// manifest or a run lock).
func checkStore(src, store string) error {
	g := fileguard.File{Path: store, What: "SQLite store", Marker: []byte(sqliteMagic), Inputs: []string{src}}
	if err := g.Check(); err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	if _, err := os.Stat(store); err == nil {
		for _, r := range []string{rundir.ManifestName, rundir.LockName} {
			if _, err := os.Lstat(filepath.Join(filepath.Dir(store), r)); err == nil {
				return fmt.Errorf("--store %s is another run's store (%s beside it); kestrel watch never writes into a run: choose a new file", store, r)
			}
		}
	}
	return nil
}
