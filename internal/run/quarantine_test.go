package run

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// TestQuarantineOverlayInManifest: a dataset run records quarantine_hash
// "none" without an overlay; after documents are quarantined the resumed
// run records the overlay's sha256, raises manifest_mismatch naming
// quarantine_hash, and none of those documents is in any of its batches.
func TestQuarantineOverlayInManifest(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	dir := filepath.Join(root, "run")
	prepareSmall(t, cfg)
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	first, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.QuarantineHash != "none" {
		t.Fatalf("quarantine_hash %q without an overlay, want none", first.QuarantineHash)
	}
	// Quarantine every document of steps 4..6 (what kestrel replay lists).
	l, err := OpenLoader(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for s := 4; s <= 6; s++ {
		b := LoaderBatches(l)(s)
		ids = append(ids, b.DocIDs...)
	}
	l.Close()
	if len(ids) == 0 {
		t.Fatal("no documents in steps 4..6")
	}
	q := &loader.Quarantine{}
	q.Add(ids, nil, "", "test", time.Now())
	overlay := filepath.Join(cfg.Data.Path, loader.QuarantineFile)
	if err := loader.WriteQuarantine(overlay, q); err != nil {
		t.Fatal(err)
	}
	cfg.Train.Steps = 12
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	last, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := runlog.HashFile(overlay)
	if last.QuarantineHash != want {
		t.Fatalf("quarantine_hash %q, want the overlay's %q", last.QuarantineHash, want)
	}
	if n := len(last.Starts); n != 2 || last.Starts[0].QuarantineHash != "none" || last.Starts[1].QuarantineHash != want {
		t.Errorf("starts %+v: want the overlay each start trained with", last.Starts)
	}
	var got *runlog.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleManifest && strings.Contains(a.Message, "quarantine_hash: none → "+want[:16]) {
			got = &a
		}
	}
	if got == nil || got.Severity != monitor.SEV1 {
		t.Fatalf("no SEV1 manifest_mismatch naming quarantine_hash: %+v", readAlerts(t, dir))
	}
	l, err = OpenLoader(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bad := map[string]bool{}
	for _, id := range ids {
		bad[id] = true
	}
	for s := 1; s <= 12; s++ {
		for _, id := range LoaderBatches(l)(s).DocIDs {
			if bad[id] {
				t.Fatalf("step %d: quarantined document %s in the batch", s, id)
			}
		}
	}
}
