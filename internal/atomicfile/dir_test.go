package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// writeTree fills dir with a file and a subdirectory holding another.
func writeTree(dir, content string) error {
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(content), 0o644); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte(content), 0o644)
}

// checkDir fails unless parent holds exactly final (no temporary or old
// directory left) with content in both files.
func checkDir(t *testing.T, final, content string) {
	t.Helper()
	for _, f := range []string{"a.txt", filepath.Join("sub", "b.txt")} {
		if b, err := os.ReadFile(filepath.Join(final, f)); err != nil || string(b) != content {
			t.Fatalf("%s: %q, %v; want %q", f, b, err, content)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(final))
	if len(ents) != 1 || ents[0].Name() != filepath.Base(final) {
		t.Fatalf("parent holds %v, want only %s", ents, filepath.Base(final))
	}
}

func TestWriteDir(t *testing.T) {
	final := filepath.Join(t.TempDir(), "parent", "ds")
	for _, content := range []string{"first", "second"} {
		if err := WriteDir(final, func(dir string) error { return writeTree(dir, content) }); err != nil {
			t.Fatal(err)
		}
		checkDir(t, final, content)
	}
	if st, err := os.Stat(final); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, %v; want 0755", st.Mode(), err)
	}
}

// TestWriteDirFailureKeepsOld: a failure while filling, while moving the
// old directory aside or while renaming the new one into place leaves the
// previous directory intact and no temporary directory behind; install
// errors name the path.
func TestWriteDirFailureKeepsOld(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		failCall int   // rename call (1-based) that fails; 0 = none
		fillErr  error // error returned by fill midway
	}{
		{name: "fill fails midway", fillErr: boom},
		{name: "move aside fails", failCall: 1},
		{name: "rename into place fails, old put back", failCall: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			final := filepath.Join(t.TempDir(), "ckpt")
			if err := WriteDir(final, func(dir string) error { return writeTree(dir, "old") }); err != nil {
				t.Fatal(err)
			}
			calls := 0
			rename = func(from, to string) error {
				calls++
				if calls == tc.failCall {
					return boom
				}
				return os.Rename(from, to)
			}
			defer func() { rename = os.Rename }()
			err := WriteDir(final, func(dir string) error {
				if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("new"), 0o644); err != nil {
					return err
				}
				return tc.fillErr
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want boom", err)
			}
			if tc.failCall > 0 && !strings.Contains(err.Error(), final) {
				t.Fatalf("err = %v, want one naming %s", err, final)
			}
			checkDir(t, final, "old")
		})
	}
}

// TestInstallRestoreFails: when the old directory cannot be put back, the
// error says where it is and it is not deleted.
func TestInstallRestoreFails(t *testing.T) {
	final := filepath.Join(t.TempDir(), "ckpt")
	if err := WriteDir(final, func(dir string) error { return writeTree(dir, "old") }); err != nil {
		t.Fatal(err)
	}
	calls := 0
	rename = func(from, to string) error {
		calls++
		if calls >= 2 {
			return errors.New("boom")
		}
		return os.Rename(from, to)
	}
	defer func() { rename = os.Rename }()
	err := WriteDir(final, func(dir string) error { return writeTree(dir, "new") })
	if err == nil || !strings.Contains(err.Error(), "could not be put back") {
		t.Fatalf("err = %v", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(final))
	if len(ents) != 1 || !TempDirName(ents[0].Name()) {
		t.Fatalf("parent holds %v, want only the old directory moved aside", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(final), ents[0].Name(), "a.txt")); string(b) != "old" {
		t.Fatalf("old directory lost: %q", b)
	}
}

func TestTempDirName(t *testing.T) {
	for name, want := range map[string]bool{
		".step-00000010.tmp-123":     true,
		".step-00000010.tmp-123.old": true,
		".tmp-step-00000010-9":       true, // older checkpoint temp names
		"step-00000010":              false,
		".hidden":                    false,
	} {
		if got := TempDirName(name); got != want {
			t.Errorf("TempDirName(%q) = %v, want %v", name, got, want)
		}
	}
}

// RemoveStaleTemps removes exactly the temporary directories a killed
// writer of this name left behind, leaves a live writer's and every other
// name alone, and puts back a previous directory that was moved aside.
func TestRemoveStaleTemps(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "ds")
	mk := func(name string) string {
		p := filepath.Join(parent, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "a.txt"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("ds")
	stale := []string{mk(".ds.tmp-123"), mk(".ds.tmp-456.old")}
	killed, err := NewDir(parent, "ds") // a writer that died: its lock is gone
	if err != nil {
		t.Fatal(err)
	}
	killed.unlock()
	stale = append(stale, killed.Path())
	live, err := NewDir(parent, "ds")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	keep := []string{mk(".ds.tmp-12a"), mk(".ds.tmp-"), mk(".other.tmp-1"), mk(".dsx.tmp-1"), mk("ds.tmp-1"), mk(".hidden"), mk(".ds"), mk(".ds.tmp-7.older")}
	if err := os.WriteFile(filepath.Join(parent, ".ds.tmp-789"), nil, 0o644); err != nil { // a file, not a directory
		t.Fatal(err)
	}
	keep = append(keep, filepath.Join(parent, ".ds.tmp-789"), live.Path(), final)

	lo, err := RemoveStaleTemps(parent, "ds")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lo.Removed)
	slices.Sort(stale)
	if !slices.Equal(lo.Removed, stale) || lo.Restored != "" {
		t.Errorf("removed %v restored %q, want removed %v", lo.Removed, lo.Restored, stale)
	}
	if runtime.GOOS != "windows" && !slices.Equal(lo.InUse, []string{live.Path()}) {
		t.Errorf("in use %v, want the live writer's %s", lo.InUse, live.Path())
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there", p)
		}
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was touched: %v", p, err)
		}
	}
	if err := live.Install(final); err != nil {
		t.Errorf("the live writer could not install: %v", err)
	}

	// Died between moving the old directory aside and installing the new one.
	os.RemoveAll(final)
	old := mk(".ds.tmp-99.old")
	lo, err = RemoveStaleTemps(parent, "ds")
	if err != nil || lo.Restored != old || len(lo.Removed) != 0 {
		t.Fatalf("leftovers %+v err %v, want %s restored", lo, err, old)
	}
	if b, _ := os.ReadFile(filepath.Join(final, "a.txt")); string(b) != ".ds.tmp-99.old" {
		t.Errorf("restored directory holds %q", b)
	}
	if lo, err := RemoveStaleTemps(filepath.Join(parent, "missing"), "ds"); err != nil || len(lo.Removed) != 0 {
		t.Errorf("missing parent: %+v %v", lo, err)
	}
}
