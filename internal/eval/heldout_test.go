package eval

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// TestCheckHeldout: a good text file hashes; a missing file, a directory,
// a FIFO (refused, not waited on), an empty or blank file and a file that
// is not UTF-8 are each an error naming the set and the file (and, for
// bad UTF-8, the offset and line of the first bad byte).
func TestCheckHeldout(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "Der Vertrag gilt ab dem 1. März.\nÜbergangsfrist: zwei Jahre.\n")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // "" = valid
	}{
		{good, ""},
		{filepath.Join(dir, "missing.txt"), "missing.txt: no such file"},
		{dir, "is a directory, not a regular file"},
		{fifo, "not a regular file"},
		{write("empty.txt", ""), "empty.txt: no text to score"},
		{write("blank.txt", " \n\t\n"), "blank.txt: no text to score"},
		{write("latin1.txt", "first line\nna\xefve\n"), "latin1.txt: not UTF-8 text: invalid byte at offset 13 (line 2)"},
		{write("cut.txt", "ok \xe2\x82"), "cut.txt: not UTF-8 text: invalid byte at offset 3 (line 1)"},
	} {
		got, err := CheckHeldout([]train.HeldoutSet{{Name: "legal", Path: tc.path}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.want == "" && got["heldout/legal"] != hashOf(t, tc.path):
			t.Errorf("%s: hashes %v", tc.path, got)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "eval.heldout[0] (legal)")):
			t.Errorf("%s: error %v, want one naming eval.heldout[0] (legal) and %q", tc.path, err, tc.want)
		}
	}
}

func hashOf(t *testing.T, p string) string {
	t.Helper()
	h, err := runlog.HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHeadText: the bound cuts back to a character boundary, never inside
// a multi-byte character; 0 reads the whole file.
func TestHeadText(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.txt")
	text := "aé€😀b" // 1 + 2 + 3 + 4 + 1 bytes
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		max  int
		want string
	}{{0, text}, {1, "a"}, {2, "a"}, {3, "aé"}, {5, "aé"}, {6, "aé€"}, {9, "aé€"}, {10, "aé€😀"}, {11, text}, {100, text}} {
		got, err := headText(p, tc.max)
		if err != nil || got != tc.want {
			t.Errorf("headText(%d) = %q, %v; want %q", tc.max, got, err, tc.want)
		}
	}
}

// TestDecontamRecord: the record follows the provenance alone.
func TestDecontamRecord(t *testing.T) {
	one := shards.EvalSetInfo{Name: "gsm8k", Files: []shards.FileHash{{Path: "/d/gsm8k/test.jsonl", SHA256: "aa"}}}
	two := shards.EvalSetInfo{Name: "piqa", Files: []shards.FileHash{{Path: "/d/piqa/tests.jsonl", SHA256: "bb"}, {Path: "/d/piqa/valid.jsonl", SHA256: "cc"}}}
	for _, tc := range []struct {
		name    string
		pv      *shards.Provenance
		summary string
		hashes  map[string]string
	}{
		{"no provenance", nil, DecontamUnknown, nil},
		{"not decontaminated", &shards.Provenance{}, DecontamNone, nil},
		{"gsm8k only", &shards.Provenance{Decontam: &shards.DecontamInfo{NGram: 13, Mode: "drop", EvalSets: []shards.EvalSetInfo{one}}},
			"13-gram drop: gsm8k", map[string]string{"decontam/gsm8k": "aa"}},
		{"two sets", &shards.Provenance{Decontam: &shards.DecontamInfo{NGram: 8, Mode: "cut", EvalSets: []shards.EvalSetInfo{two, one}}},
			"8-gram cut: gsm8k, piqa", map[string]string{"decontam/gsm8k": "aa",
				"decontam/piqa": "c0fa5da2b433a25d8f02b8ef4ab013284dbeb2563cfa0159ee953fe77438d3dd"}}, // sha256 of "bb\ncc\n",
	} {
		t.Run(tc.name, func(t *testing.T) {
			summary, hashes := DecontamRecord(tc.pv)
			if summary != tc.summary || !maps.Equal(hashes, tc.hashes) {
				t.Errorf("record %q %v, want %q %v", summary, hashes, tc.summary, tc.hashes)
			}
		})
	}
}

// TestStaleDecontam names an eval file that changed or vanished since
// prepare, and nothing when the files are as prepare read them.
func TestStaleDecontam(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "set.jsonl")
	if err := os.WriteFile(p, []byte(`{"question":"q","answer":"a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pv := &shards.Provenance{Decontam: &shards.DecontamInfo{EvalSets: []shards.EvalSetInfo{{Name: "mine", Files: []shards.FileHash{{Path: p, SHA256: hashOf(t, p)}}}}}}
	if s := StaleDecontam(pv); len(s) != 0 {
		t.Errorf("unchanged file reported stale: %v", s)
	}
	if err := os.WriteFile(p, []byte(`{"question":"q2","answer":"a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := StaleDecontam(pv); len(s) != 1 || !strings.Contains(s[0], "mine: "+p+" (changed since prepare") {
		t.Errorf("changed file: %v", s)
	}
	os.Remove(p)
	if s := StaleDecontam(pv); len(s) != 1 || !strings.Contains(s[0], p) {
		t.Errorf("removed file: %v", s)
	}
}
