package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/placeholder_lines.golden")

// TestShippedConfigsKeepRawPaths: for every shipped config, config_hash
// and the written config.toml do not depend on where $KESTREL_DATA
// points (a run directory moves between machines and resumes without a
// manifest_mismatch), the written file keeps ${KESTREL_DATA} (its lines
// that hold it are the golden), and Resolve expands every path without
// changing the raw config it was given.
func TestShippedConfigsKeepRawPaths(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped configs: %v", err)
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	var golden bytes.Buffer
	for _, f := range files {
		var hashes, written []string
		for _, root := range []string{dirA, dirB} {
			t.Setenv(datadir.Env, root)
			raw, err := Load(f, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			before, _ := Hash(raw)
			res, err := Resolve(raw)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if after, _ := Hash(raw); after != before {
				t.Fatalf("%s: Resolve changed the raw config's hash", f)
			}
			mres, _ := Marshal(res)
			if l := placeholderLines(string(mres)); len(l) > 0 {
				t.Errorf("%s: resolved config still holds %s: %q", f, datadir.Placeholder, l)
			}
			out := filepath.Join(t.TempDir(), "config.toml")
			if err := WriteFile(out, raw); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(out)
			if bytes.Contains(b, []byte(root)) {
				t.Errorf("%s: config.toml holds the data directory %s", f, root)
			}
			back, err := Load(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h, _ := Hash(back); h != before {
				t.Errorf("%s: config.toml read back hashes %s, want %s", f, h, before)
			}
			hashes, written = append(hashes, before), append(written, string(b))
		}
		if hashes[0] != hashes[1] || written[0] != written[1] {
			t.Errorf("%s: config_hash or config.toml depends on $%s: %v", f, datadir.Env, hashes)
		}
		fmt.Fprintf(&golden, "# %s\n", filepath.Base(f))
		for _, l := range placeholderLines(written[0]) {
			golden.WriteString(l + "\n")
		}
	}
	const gp = "testdata/placeholder_lines.golden"
	if *updateGolden {
		if err := os.WriteFile(gp, golden.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(gp)
	if err != nil {
		t.Fatalf("%v (run go test -run TestShippedConfigsKeepRawPaths -update)", err)
	}
	// Config by config, so a config shipped later is only checked for
	// the invariants above until -update records it.
	got, wantBy := goldenSections(golden.String()), goldenSections(string(want))
	for f, w := range wantBy {
		if g, ok := got[f]; ok && g != w {
			t.Errorf("%s: the ${KESTREL_DATA} lines of the written config changed:\n%s\nwant\n%s", f, g, w)
		}
	}
}

// goldenSections splits the golden text into "# name" sections.
func goldenSections(text string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, l := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(l, "# ") {
			name = strings.TrimSpace(l[2:])
			continue
		}
		out[name] += l
	}
	return out
}

// TestResolveNamesKey: a missing data directory names the config key.
func TestResolveNamesKey(t *testing.T) {
	t.Setenv(datadir.Env, filepath.Join(t.TempDir(), "gone"))
	cfg := Default()
	cfg.Data.Train = datadir.Placeholder + "/x.txt"
	_, err := Resolve(cfg)
	if err == nil || !strings.Contains(err.Error(), "data.train") || !strings.Contains(err.Error(), "$"+datadir.Env) {
		t.Fatalf("err = %v, want one naming data.train and $%s", err, datadir.Env)
	}
}

// placeholderLines are the lines of a TOML text, comments aside, that
// hold ${KESTREL_DATA}.
func placeholderLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") && strings.Contains(l, datadir.Placeholder) {
			out = append(out, l)
		}
	}
	return out
}

// TestResolveOnlyAskedSections: sections not asked for keep their
// placeholders and need no data directory (a run with absolute paths
// trains without one, though prepare's default decontamination sets name
// it).
func TestResolveOnlyAskedSections(t *testing.T) {
	t.Setenv(datadir.Env, filepath.Join(t.TempDir(), "gone"))
	cfg := Default()
	cfg.Data.Train = "/abs/input.txt"
	res, err := Resolve(cfg, RunSections...)
	if err != nil {
		t.Fatalf("the run's sections hold no placeholder, yet: %v", err)
	}
	if got := res.Prepare.Decontam.Index.EvalSets[0].Paths[0]; !strings.HasPrefix(got, datadir.Placeholder) {
		t.Errorf("prepare was not asked for, yet resolved to %q", got)
	}
	if _, err := Resolve(cfg); err == nil || !strings.Contains(err.Error(), "prepare.decontam") {
		t.Errorf("resolving every section: err = %v, want one naming prepare.decontam", err)
	}
}
