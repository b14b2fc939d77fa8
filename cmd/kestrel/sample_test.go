package main

import (
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/generate"
)

// TestSampleCLI: kestrel sample prints what generate.Generate returns,
// plus a newline, and refuses bad flags. (Sampling itself is tested in
// internal/generate.)
func TestSampleCLI(t *testing.T) {
	cfg := tinyByteConfig(3)
	runDir := trainTiny(t, cfg)
	var out strings.Builder
	cmd := newSampleCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"--run", runDir, "--prompt", "To be", "--temperature", "0", "--tokens", "12"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want, err := generate.Generate(runDir, generate.Options{Prompt: "To be", Temperature: 0, TopK: 200, TopP: 1, Tokens: 12})
	if err != nil || out.String() != want+"\n" {
		t.Errorf("kestrel sample printed %q, Generate gives %q (%v)", out.String(), want, err)
	}
	for _, args := range [][]string{{"--prompt", "x"}, {"--run", runDir, "--top-p", "0"}} {
		cmd := newSampleCmd()
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(args)
		if err := cmd.Execute(); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
