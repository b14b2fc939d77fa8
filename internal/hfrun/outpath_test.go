package hfrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/hf"
)

// TestExportOutputRule: kestrel export writes a fresh directory or replaces
// an earlier export; a downloaded model folder (config.json and the user's
// notes) survives even --force (which is about the model, not the path)
// unless --overwrite; a regular file or a symbolic link is never replaced.
func TestExportOutputRule(t *testing.T) {
	cfg := tinyConfig(256)
	cfg.Train.Steps = 1
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, cfg, "", run)
	root := t.TempDir()
	earlier := filepath.Join(root, "earlier")
	if _, err := Export(context.Background(), Options{Run: run, Out: earlier, Log: quiet}); err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(root, "downloaded")
	os.Mkdir(user, 0o755)
	os.WriteFile(filepath.Join(user, hf.ConfigFile), []byte("{}"), 0o644)
	notes := filepath.Join(user, "notes.txt")
	os.WriteFile(notes, []byte("keep"), 0o644)
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("keep"), 0o644)
	link := filepath.Join(root, "link")
	os.Symlink(earlier, link)
	for _, tc := range []struct {
		name             string
		out              string
		force, overwrite bool
		want             string // "" = exported
		keep             string // a file that must keep "keep"
	}{
		{"fresh", filepath.Join(root, "fresh"), false, false, "", ""},
		{"earlier export", earlier, false, false, "", ""},
		{"downloaded folder", user, false, false, "no " + hf.ExportManifestFile, notes},
		{"downloaded folder, --force", user, true, false, "--overwrite", notes},
		{"regular file", file, false, false, "is a regular file, not a directory", file},
		{"regular file, --overwrite", file, false, true, "is a regular file, not a directory", file},
		{"symbolic link", link, false, true, "is a symbolic link", ""},
		{"downloaded folder, --overwrite", user, false, true, "", ""},
	} {
		_, err := Export(context.Background(), Options{Run: run, Out: tc.out, Force: tc.force, Overwrite: tc.overwrite, Log: quiet})
		if tc.want == "" {
			if err != nil || !hasFile(filepath.Join(tc.out, hf.ExportManifestFile)) {
				t.Errorf("%s: %v; want an export with its manifest", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.out) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a refusal naming %s and %q", tc.name, err, tc.out, tc.want)
		}
		if tc.keep != "" {
			if b, err := os.ReadFile(tc.keep); err != nil || string(b) != "keep" {
				t.Errorf("%s: %s lost: %q %v", tc.name, tc.keep, b, err)
			}
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced: %v", err)
	}
}

// TestImportOutputRule: kestrel import --out never writes over a file of
// the model it reads (its config.json) or the base config, never through a
// symbolic link, and replaces an existing file only when kestrel wrote it
// or with --overwrite.
func TestImportOutputRule(t *testing.T) {
	root := t.TempDir()
	model := filepath.Join(root, "model")
	os.Mkdir(model, 0o755)
	os.WriteFile(filepath.Join(model, hf.ConfigFile), []byte("{}"), 0o644)
	base := filepath.Join(root, "base.toml")
	if err := config.WriteFile(base, config.Default()); err != nil {
		t.Fatal(err)
	}
	ours := filepath.Join(root, "ours.toml")
	if err := config.WriteFile(ours, config.Default()); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(root, "mine.toml")
	os.WriteFile(mine, []byte("# my notes\n"), 0o644)
	link := filepath.Join(root, "link.toml")
	os.Symlink(ours, link)
	for _, tc := range []struct {
		out       string
		base      string
		overwrite bool
		want      string
	}{
		{filepath.Join(root, "new.toml"), "", false, ""},
		{ours, "", false, ""},
		{mine, "", false, "is not a run config kestrel wrote; choose another path, or pass --overwrite"},
		{mine, "", true, ""},
		{filepath.Join(model, hf.ConfigFile), "", true, "is inside " + model + ", which this command reads"},
		{filepath.Join(model, "run.toml"), "", true, "is inside " + model},
		{base, base, true, "is an input of this command"},
		{link, "", true, "is a symbolic link"},
		{root, "", true, "is a directory, not a regular file"},
	} {
		err := CheckImportOut(tc.out, model, tc.base, tc.overwrite)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--out %s (--config %q, overwrite %v): %v; want %q", tc.out, tc.base, tc.overwrite, err, tc.want)
		}
	}
}

func hasFile(p string) bool { _, err := os.Stat(p); return err == nil }
