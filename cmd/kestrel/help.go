package main

import (
	"embed"
	"strings"
)

// The long help of each command is prose for the person at the terminal,
// kept as text beside the commands (help/NAME.txt, NAME the command path
// joined by "-") so that the Go files stay flags in, library calls out.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns help/NAME.txt without its final newline. Every name is
// a constant of this package and TestHelpFilesAllUsed checks that each file
// is some command's help, so a missing file is a build-time mistake; it
// shows as an empty help text rather than a crash.
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}
