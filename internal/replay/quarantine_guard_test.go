package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

func datasetDir(t *testing.T) string {
	t.Helper()
	ds := t.TempDir()
	if err := os.WriteFile(filepath.Join(ds, "manifest.json"), []byte(`{"format":"kestrel-shards","shards":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestQuarantineRefusesBadEntries: empty ids or shard names (--docs ','
// gives two empty ones) are refused before anything is written, so the
// overlay always stays one the loader reads; an overlay that existed is
// left as it was.
func TestQuarantineRefusesBadEntries(t *testing.T) {
	ds := datasetDir(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if _, _, _, err := Quarantine(QuarantineRequest{Dataset: ds, Docs: []string{"ok1"}, Reason: "r", Now: now}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ds, loader.QuarantineFile)
	before, _ := os.ReadFile(path)
	for _, c := range []struct {
		req  QuarantineRequest
		want string
	}{
		{QuarantineRequest{Docs: []string{"", ""}}, "--docs: entry 1 of 2 is empty"},
		{QuarantineRequest{Docs: []string{"a", " "}}, "--docs: entry 2 of 2 is empty"},
		{QuarantineRequest{Shards: []string{""}}, "--shards: entry 1 of 1 is empty"},
	} {
		c.req.Dataset, c.req.Reason, c.req.Now = ds, "r", now
		if _, _, _, err := Quarantine(c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.req, err, c.want)
		}
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Errorf("a refused request changed the overlay:\n%s\n→\n%s", before, after)
	}
	if _, err := loader.ReadQuarantine(path); err != nil {
		t.Errorf("the overlay no longer reads: %v", err)
	}
	// And the next quarantine still works.
	if _, added, total, err := Quarantine(QuarantineRequest{Dataset: ds, Docs: []string{"ok2"}, Reason: "r", Now: now}); err != nil || added != 1 || total != 2 {
		t.Errorf("next quarantine: %d %d %v", added, total, err)
	}
}

// TestQuarantineConcurrent: quarantines of the same dataset run at the same
// time each keep their entries (the read-modify-write is locked).
func TestQuarantineConcurrent(t *testing.T) {
	ds := datasetDir(t)
	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, _, _, err := Quarantine(QuarantineRequest{Dataset: ds, Docs: []string{fmt.Sprintf("w%d-%d", w, i)}, Reason: "r"})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	q, err := loader.ReadQuarantine(filepath.Join(ds, loader.QuarantineFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Entries) != writers*each {
		t.Errorf("%d entries, want %d: concurrent quarantines lost entries", len(q.Entries), writers*each)
	}
}

// TestQuarantineRefusesRunDir: a run directory (its manifest.json is a
// run manifest, it holds config.toml) and a directory whose manifest lists
// no shards are refused with a message saying what was expected, and
// nothing is written there.
func TestQuarantineRefusesRunDir(t *testing.T) {
	run := t.TempDir()
	os.WriteFile(filepath.Join(run, "manifest.json"), []byte(`{"config_hash":"abc","seed":1}`), 0o644)
	os.WriteFile(filepath.Join(run, "config.toml"), []byte("[run]\n"), 0o644)
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "manifest.json"), []byte(`{"name":"x"}`), 0o644)
	for _, c := range []struct{ dir, want string }{
		{run, "is a run directory, not a prepared dataset"},
		{other, "not a prepared dataset: its manifest.json lists no shards"},
	} {
		_, _, _, err := Quarantine(QuarantineRequest{Dataset: c.dir, Docs: []string{"d"}, Reason: "r"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
		for _, f := range []string{loader.QuarantineFile, QuarantineLockFile} {
			if _, err := os.Stat(filepath.Join(c.dir, f)); err == nil {
				t.Errorf("%s written in %s", f, c.dir)
			}
		}
	}
}
