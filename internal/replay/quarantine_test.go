package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

// TestQuarantineCommand: kestrel quarantine's library call adds the ids of
// a replay's --json output (one source's only, with --source) and explicit
// ids and shards, each with reason and time, skips duplicates, and refuses
// a missing reason, an empty request and a directory that is no dataset
// without writing anything.
func TestQuarantineCommand(t *testing.T) {
	ds := t.TempDir()
	if err := os.WriteFile(filepath.Join(ds, "manifest.json"), []byte(`{"shards": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &Result{Steps: []Step{{Step: 5, Rows: []Row{
		{Source: "web", Docs: []Doc{{ID: "w1"}, {ID: "w2", Offset: 9}}},
		{Source: "books", Docs: []Doc{{ID: "b1"}}},
		{Source: "web", Docs: []Doc{{ID: "w1"}}},
	}}}}
	rp := filepath.Join(t.TempDir(), "replay.json")
	f, _ := os.Create(rp)
	if err := rep.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, bad := range []QuarantineRequest{
		{Dataset: ds, Docs: []string{"x"}},                           // no reason
		{Dataset: ds, Reason: "r"},                                   // nothing
		{Dataset: t.TempDir(), Docs: []string{"x"}, Reason: "r"},     // not a dataset
		{Dataset: ds, FromReplay: ds + "/missing.json", Reason: "r"}, // no replay file
	} {
		if _, _, _, err := Quarantine(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(ds, loader.QuarantineFile)); err == nil {
		t.Fatal("a refused request wrote the overlay")
	}
	path, added, total, err := Quarantine(QuarantineRequest{Dataset: ds, FromReplay: rp, Source: "web", Reason: "spike at 5", Now: now})
	if err != nil || added != 2 || total != 2 || path != filepath.Join(ds, loader.QuarantineFile) {
		t.Fatalf("from replay: %s %d %d %v", path, added, total, err)
	}
	_, added, total, err = Quarantine(QuarantineRequest{Dataset: ds, Docs: []string{"w1", "b9"}, Shards: []string{"s.bin"}, Reason: "more", Now: now})
	if err != nil || added != 3 || total != 5 {
		t.Fatalf("docs: %d %d %v", added, total, err)
	}
	q, err := loader.ReadQuarantine(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range q.Entries {
		ids = append(ids, e.Source+":"+e.Doc+e.Shard+"/"+e.Reason+"/"+e.Time)
	}
	want := "web:w1/spike at 5/2026-11-23T12:00:00Z web:w2/spike at 5/2026-11-23T12:00:00Z :w1/more/2026-11-23T12:00:00Z :b9/more/2026-11-23T12:00:00Z :s.bin/more/2026-11-23T12:00:00Z"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("entries\n%s\nwant\n%s", got, want)
	}
}
