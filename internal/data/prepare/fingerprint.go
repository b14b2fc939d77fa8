package prepare

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"

	"github.com/kestrel-lm/kestrel/internal/buildinfo"
	"github.com/kestrel-lm/kestrel/internal/data/corpus"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// binaryVersion is the kestrel build the fingerprint records (a variable so
// tests can play a new binary).
var binaryVersion = func() string { return buildinfo.Describe() + " " + buildinfo.ModulesHash() }

// fingerprint hashes what the output of Run depends on: the resolved
// config, each source's resolved filter set (language ID and compression
// ratio included), the pipeline version, the binary's version (commit and linked
// modules), every input file's path, size and modification time, and —
// when decontamination is on — the contents of every evaluation file it
// protects against, so a changed eval file (a fixed item, a new version
// of the benchmark) makes prepare decontaminate again even when its size
// and time look the same.
// raw is the config as given (its rendering is hashed with the paths as
// the user wrote them), cfg the same with its paths resolved, which the
// input and eval files are read from (and hashed by: their resolved paths
// are part of the fingerprint).
func fingerprint(raw, cfg Config, inputs [][]corpus.Input, strict bool) (string, error) {
	h := sha256.New()
	b, err := toml.Marshal(raw)
	if err != nil {
		return "", fmt.Errorf("prepare: fingerprint: %w", err)
	}
	fmt.Fprintf(h, "v%d strict=%v\nbinary %s\n", pipelineVersion, strict, binaryVersion())
	h.Write(b)
	// Each source's filter set as resolved (its kind's defaults and its
	// overrides), so a changed default re-prepares even under a binary
	// whose version is unknown.
	for i, s := range cfg.Sources {
		fc, on, err := s.filterConfig()
		if err != nil {
			return "", fmt.Errorf("prepare: fingerprint: %w", err)
		}
		fb, err := toml.Marshal(fc)
		if err != nil {
			return "", fmt.Errorf("prepare: fingerprint: source %q filters: %w", s.Name, err)
		}
		fmt.Fprintf(h, "filters %d %v\n%s", i, on, fb)
	}
	for _, ins := range inputs {
		for _, in := range ins {
			err := filepath.WalkDir(in.Path, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					return nil
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "%s\t%d\t%d\n", p, info.Size(), info.ModTime().UnixNano())
				return nil
			})
			if err != nil {
				return "", fmt.Errorf("prepare: fingerprint %s: %w", in.Path, err)
			}
		}
	}
	if cfg.Decontam.Enabled {
		for _, set := range cfg.Decontam.Index.EvalSets {
			for _, path := range set.Paths {
				fh, err := runlog.HashFile(path)
				if err != nil {
					return "", fmt.Errorf("prepare: fingerprint: prepare.decontam eval set %s: %w", set.Name, err)
				}
				fmt.Fprintf(h, "eval %s\t%s\t%s\n", set.Name, path, fh)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
