// Package configs embeds kestrel's shipped configuration files, so `kestrel
// demo` runs with its defaults from any directory. The files are ordinary
// TOML configs: copy one and edit it to make your own run.
package configs

import (
	"embed"
	"fmt"
)

//go:embed *.toml
var files embed.FS

// Read returns the shipped config file name (e.g. "demo.toml").
func Read(name string) ([]byte, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("shipped config %s: %w", name, err)
	}
	return b, nil
}

// Names lists the shipped config files.
func Names() []string {
	entries, _ := files.ReadDir(".")
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
