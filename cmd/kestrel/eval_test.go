package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/eval"
)

// TestEvalCLI: kestrel eval prints the table, or with --json the result of
// eval.Run, and refuses a missing --run and an unknown task. (Scoring itself
// is tested in internal/eval.)
func TestEvalCLI(t *testing.T) {
	cfg := tinyByteConfig(3)
	runDir := trainTiny(t, cfg)
	exec := func(args ...string) (string, error) {
		var out strings.Builder
		cmd := newEvalCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	tab, err := exec("--run", runDir, "--tasks", "piqa,bpb", "--limit", "3")
	if err != nil || !strings.Contains(tab, "piqa") || !strings.Contains(tab, "bits/byte") {
		t.Fatalf("table %q (%v)", tab, err)
	}
	js, err := exec("--run", runDir, "--tasks", "hellaswag", "--limit", "4", "--checkpoint", "last", "--json")
	var res eval.Result
	if err != nil || json.Unmarshal([]byte(js), &res) != nil || len(res.MC) != 1 || res.MC[0].Task != "hellaswag" || res.MC[0].N != 4 || res.Step != 3 {
		t.Fatalf("json %q (%v)", js, err)
	}
	// the new tasks read the byte-level run's data through its config.toml
	b, err := config.Marshal(cfg)
	if err != nil || os.WriteFile(filepath.Join(runDir, "config.toml"), b, 0o644) != nil {
		t.Fatal(err)
	}
	js, err = exec("--run", runDir, "--tasks", "gsm8k-nll,memorization,bpb-val", "--limit", "2", "--json")
	res = eval.Result{}
	if err != nil || json.Unmarshal([]byte(js), &res) != nil || len(res.NLL) != 1 || res.NLL[0].N != 2 || res.Mem == nil ||
		res.Mem.Train.Docs != 2 || res.Mem.HeldOut.Docs != 2 || res.Mem.Prefix != 16 || res.Mem.Cont != 16 || len(res.BPB) != 1 || res.BPB[0].Name != "val" || res.BPB[0].Tokens != 64 {
		t.Fatalf("new tasks json %q (%v)", js, err)
	}
	if tab, err := exec("--run", runDir, "--tasks", "gsm8k-nll,memorization", "--limit", "1"); err != nil || !strings.Contains(tab, "exact match") || !strings.Contains(tab, "gsm8k-nll") {
		t.Fatalf("new tasks table %q (%v)", tab, err)
	}
	for _, args := range [][]string{{"--tasks", "piqa"}, {"--run", runDir, "--tasks", "nope"}, {"--run", runDir, "--checkpoint", "step-99"}} {
		if _, err := exec(args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestScoreCLI: kestrel score prints eval.ScoreText's JSON for --text,
// --file and --tokens, and refuses none or two of them.
func TestScoreCLI(t *testing.T) {
	runDir := trainTiny(t, tinyByteConfig(2))
	exec := func(args ...string) (eval.ScoreResult, error) {
		var out strings.Builder
		cmd := newScoreCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(args)
		var r eval.ScoreResult
		if err := cmd.Execute(); err != nil {
			return r, err
		}
		return r, json.Unmarshal([]byte(out.String()), &r)
	}
	r, err := exec("--run", runDir, "--text", "hello")
	if err != nil || len(r.Tokens) != 6 || r.Scored != 5 || r.Tokens[1].LogProb == nil {
		t.Fatalf("--text: %+v %v", r, err)
	}
	f := filepath.Join(t.TempDir(), "t.txt")
	os.WriteFile(f, []byte("hello"), 0o644)
	if r2, err := exec("--run", runDir, "--file", f); err != nil || r2.TotalNLL != r.TotalNLL {
		t.Fatalf("--file: %+v %v", r2, err)
	}
	if r3, err := exec("--run", runDir, "--tokens", "10,104,101,108,108,111"); err != nil || r3.TotalNLL != r.TotalNLL {
		t.Fatalf("--tokens: %+v %v", r3, err)
	}
	for _, args := range [][]string{{"--run", runDir}, {"--run", runDir, "--text", "a", "--tokens", "1,2"}, {"--run", runDir, "--file", f + ".missing"}} {
		if _, err := exec(args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
