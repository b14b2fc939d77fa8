package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/eval"
)

// TestEvalHeldoutCLI: --heldout NAME=PATH scores a text as
// heldout/<name> (bits per byte, its sha256 in eval_hashes) with
// --heldout-bytes bytes; a malformed flag and a bad file are refused
// naming them.
func TestEvalHeldoutCLI(t *testing.T) {
	runDir := trainTiny(t, tinyByteConfig(3))
	text := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("Field notes on the kestrel, a small falcon.\n", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	exec := func(args ...string) (string, error) {
		var out strings.Builder
		cmd := newEvalCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	js, err := exec("--run", runDir, "--tasks", "bpb", "--limit", "1", "--heldout", "notes="+text, "--heldout-bytes", "500", "--json")
	var res eval.Result
	if err != nil || json.Unmarshal([]byte(js), &res) != nil || len(res.BPB) != 2 || res.BPB[1].Name != "heldout/notes" ||
		res.BPB[1].Bytes != 500 || !(res.BPB[1].BPB > 0) || len(res.EvalHashes["heldout/notes"]) != 64 {
		t.Fatalf("json %q (%v)", js, err)
	}
	for _, tc := range []struct{ arg, want string }{
		{"notes", "want NAME=PATH"},
		{"no tes=" + text, `name = "no tes"`},
		{"notes=" + text + ".missing", text + ".missing: no such file"},
	} {
		if _, err := exec("--run", runDir, "--tasks", "heldout", "--heldout", tc.arg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--heldout %s: %v, want %q", tc.arg, err, tc.want)
		}
	}
	if _, err := exec("--run", runDir, "--tasks", "heldout"); err == nil || !strings.Contains(err.Error(), "no held-out sets") {
		t.Errorf("heldout without sets: %v", err)
	}
}
