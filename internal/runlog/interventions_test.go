package runlog

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestInterventionsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if ivs, err := ReadInterventions(dir); err != nil || ivs != nil {
		t.Fatalf("missing file: %v %v", ivs, err)
	}
	a := Intervention{ID: "rewind-1", Kind: "rewind", Time: "t", FromStep: 90, ToStep: 60, SkipFrom: 61, SkipTo: 70, SkipSteps: 10,
		LRScale: 0.5, LRSteps: 20, Set: map[string]string{"optim.max_grad_norm": "0.2"}, Reason: "r", Checkpoint: "checkpoints/step-00000060"}
	b := Intervention{ID: "rewind-2", Kind: "rewind", ToStep: 80, Checkpoint: "checkpoints/step-00000080"}
	for _, iv := range []*Intervention{&a, &b} {
		if err := AppendIntervention(dir, iv); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadInterventions(dir)
	if err != nil || !reflect.DeepEqual(got, []Intervention{a, b}) {
		t.Fatalf("read back %+v, %v", got, err)
	}
}

func TestInterventionsRefused(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"id":"x","to_step":1,"bogus":1}`, "unknown field"},
		{`{"id":"","to_step":1}`, "empty id"},
		{`{"id":"x","to_step":1,"skip_from":5,"skip_to":6,"skip_steps":3}`, "does not hold"},
		{`{"id":"x","to_step":-1}`, "negative"},
		{`{"id":"x","to_step":1`, "interventions.jsonl:2"},
	} {
		_, err := ParseInterventions([]byte(`{"id":"ok","to_step":1}`+"\n"+c.line), InterventionsFile)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.line, err, c.want)
		}
	}
	if err := AppendIntervention(t.TempDir(), &Intervention{ID: "x", SkipSteps: -1}); err == nil {
		t.Error("an invalid intervention was appended")
	}
}

// TestArchiveMetrics: the lines after the step (and a torn last line) move
// to the archive byte for byte; nothing is lost; a second archive of the
// same id is refused.
func TestArchiveMetrics(t *testing.T) {
	dir := t.TempDir()
	body := `{"step":1,"train_loss_raw":3}` + "\n" + `{"step":2,"val_loss":2.5}` + "\n" + `not json` + "\n" +
		`{"step":3,"train_loss_raw":"NaN"}` + "\n" + `{"event":"checkpoint","step":3}` + "\n" + `{"step":4,"tr`
	path := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := ArchiveMetrics(dir, 2, "rewind-1")
	if err != nil || n != 3 {
		t.Fatalf("moved %d, %v", n, err)
	}
	kept, _ := os.ReadFile(path)
	arch, _ := os.ReadFile(filepath.Join(dir, MetricsArchiveName("rewind-1")))
	wantKept := `{"step":1,"train_loss_raw":3}` + "\n" + `{"step":2,"val_loss":2.5}` + "\n" + `not json` + "\n"
	if string(kept) != wantKept || string(kept)+string(arch) != body {
		t.Fatalf("kept %q archived %q", kept, arch)
	}
	if last, err := LastStep(path); err != nil || last != 2 {
		t.Fatalf("LastStep %d %v", last, err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ArchiveMetrics(dir, 2, "rewind-1"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second archive: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != body {
		t.Fatal("a refused archive changed metrics.jsonl")
	}
}

func TestManifestDiffInterventions(t *testing.T) {
	before := &Manifest{ConfigHash: "user"}
	for _, c := range []struct {
		cur  Manifest
		diff bool
	}{
		{Manifest{ConfigHash: "user"}, false},
		{Manifest{ConfigHash: "overridden", BaseConfigHash: "user", Interventions: []string{"rewind-1"}}, false},
		{Manifest{ConfigHash: "overridden", BaseConfigHash: "changed", Interventions: []string{"rewind-1"}}, true},
		{Manifest{ConfigHash: "changed"}, true},
	} {
		if d := before.Diff(&c.cur); (len(d) > 0) != c.diff {
			t.Errorf("%+v: diff %v, want a difference %v", c.cur, d, c.diff)
		}
	}
}
