package main

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpFilesAllUsed: every help/NAME.txt begins the long help of exactly
// one command (some append their config flags' text), and every command
// that has long help reads a file that exists.
func TestHelpFilesAllUsed(t *testing.T) {
	var longs []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Long != "" {
			longs = append(longs, c.Long)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("help files: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt")
		h := helpText(name)
		if h == "" {
			t.Errorf("%s is empty", f)
			continue
		}
		n := 0
		for _, l := range longs {
			if strings.HasPrefix(l, h) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s begins the long help of %d commands, want 1", f, n)
		}
	}
	if helpText("no-such-command") != "" {
		t.Error("a missing help file gave text")
	}
	if len(longs) != len(files) {
		t.Errorf("%d commands have long help, %d help files", len(longs), len(files))
	}
}
