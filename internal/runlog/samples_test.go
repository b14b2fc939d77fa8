package runlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func gen(step int, mode, text string) Generation {
	return Generation{Step: step, Checkpoint: "checkpoints/step-x", Weights: "raw", Prompt: "ROMEO:", Mode: mode, Tokens: len(text), Text: text}
}

func TestGenerationsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := []Generation{gen(10, ModeGreedy, "a\nb \"q\""), gen(10, ModeSampled, "\xff bad utf8")}
	in[1].Temperature, in[1].TopK, in[1].Seed = 0.8, 40, 7
	if err := AppendGenerations(dir, in); err != nil {
		t.Fatal(err)
	}
	if err := AppendGenerations(dir, []Generation{gen(20, ModeGreedy, "x")}); err != nil {
		t.Fatal(err)
	}
	got, skipped, bad, err := ReadGenerations(dir)
	if err != nil || skipped != 0 || bad != "" {
		t.Fatalf("read: %v skipped %d %q", err, skipped, bad)
	}
	if len(got) != 3 || got[0].Text != in[0].Text || got[1].Temperature != 0.8 || got[1].TopK != 40 || got[1].Seed != 7 || got[2].Step != 20 {
		t.Fatalf("round trip: %+v", got)
	}
	if got[1].Text != "\uFFFD bad utf8" {
		t.Errorf("invalid UTF-8 should read back as U+FFFD, got %q", got[1].Text)
	}
}

func TestReadGenerationsSkipsBadLines(t *testing.T) {
	cases := []struct {
		name, data string
		good, skip int
		bad        string
	}{
		{"missing file", "", 0, 0, ""},
		{"torn last line", `{"step":1,"mode":"greedy","text":"a"}` + "\n" + `{"step":2,"mo`, 1, 1, ":2:"},
		{"unknown field", `{"step":1,"mode":"greedy","extra":1}` + "\n" + `{"step":2,"mode":"sampled"}` + "\n", 1, 1, "extra"},
		{"bad mode", `{"step":1,"mode":"beam"}` + "\n", 0, 1, "mode"},
		{"negative step", `{"step":-1,"mode":"greedy"}` + "\n", 0, 1, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.data != "" {
				if err := os.WriteFile(filepath.Join(dir, SamplesFile), []byte(c.data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, skipped, bad, err := ReadGenerations(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.good || skipped != c.skip || !strings.Contains(bad, c.bad) {
				t.Fatalf("got %d good, %d skipped, %q; want %d, %d, containing %q", len(got), skipped, bad, c.good, c.skip, c.bad)
			}
			if c.skip > 0 && !strings.Contains(bad, SamplesFile) {
				t.Errorf("the bad line %q should name the file", bad)
			}
		})
	}
}

func TestReadGenerationsRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, SamplesFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ReadGenerations(dir); err == nil {
		t.Fatal("a directory named samples.jsonl was read")
	}
	if err := AppendGenerations(dir, []Generation{gen(1, ModeGreedy, "a")}); err == nil {
		t.Fatal("appended to a directory named samples.jsonl")
	}
}

func TestTruncateGenerations(t *testing.T) {
	lines := []string{
		`{"step":10,"mode":"greedy","text":"a"}`,
		`not json: kept`,
		`{"step":20,"mode":"greedy","text":"b"}`,
		`{"step":30,"mode":"sampled","text":"c","unix_time":100}`,
		`{"step":30,"mode":"sampled","text":"after the rewind","unix_time":300}`,
	}
	body := strings.Join(lines, "\n") + "\n" + `{"step":40,"mo` // torn
	cases := []struct {
		name      string
		step      int
		archive   string
		removed   int
		kept      []string
		archived  string
		archTwice bool
	}{
		{"resume drops", 20, "", 3, lines[:3], "", false},
		{"rewind archives what came before it", 10, "rewind-1", 4, lines[:2], lines[2] + "\n" + lines[3] + "\n", false},
		{"redo after a crash does not duplicate", 10, "rewind-1", 4, lines[:2], lines[2] + "\n" + lines[3] + "\n", true},
		{"nothing after the step", 40, "", 1, lines, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, SamplesFile)
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.archTwice { // the archive was written, then a crash before samples.jsonl was replaced
				if err := os.WriteFile(filepath.Join(dir, SamplesArchiveName(c.archive)), []byte(c.archived), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := TruncateGenerations(dir, c.step, c.archive, 200)
			if err != nil || removed != c.removed {
				t.Fatalf("removed %d, %v; want %d", removed, err, c.removed)
			}
			b, _ := os.ReadFile(path)
			if want := strings.Join(c.kept, "\n") + "\n"; string(b) != want {
				t.Errorf("kept %q, want %q", b, want)
			}
			a, err := os.ReadFile(filepath.Join(dir, SamplesArchiveName("rewind-1")))
			if c.archived == "" {
				if err == nil {
					t.Errorf("an archive was written: %q", a)
				}
			} else if string(a) != c.archived {
				t.Errorf("archive %q, want %q", a, c.archived)
			}
		})
	}
	if n, err := TruncateGenerations(t.TempDir(), 5, "", 0); n != 0 || err != nil {
		t.Fatalf("missing file: %d, %v", n, err)
	}
}

func FuzzParseGenerations(f *testing.F) {
	f.Add([]byte(`{"step":10,"mode":"greedy","text":"a"}` + "\n" + `{"step":2,"mo`))
	f.Add([]byte("{}\n\n[1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, skipped, bad := ParseGenerations(data, "samples.jsonl")
		if (skipped == 0) != (bad == "") {
			t.Fatalf("skipped %d but bad %q", skipped, bad)
		}
		for i := range gs {
			if err := gs[i].Validate(); err != nil {
				t.Fatalf("returned an invalid generation: %v", err)
			}
		}
	})
}
