package runlock

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSymlinkLockRefused: a lock path that is a symbolic link (to a file,
// to nothing, or to a directory) or another non-regular file is refused
// with an error naming it, and the link's target is neither written nor
// removed.
func TestSymlinkLockRefused(t *testing.T) {
	for _, m := range modes() {
		for _, c := range []struct {
			name string
			make func(t *testing.T, dir, target string)
			want string
		}{
			{"symlink to a file", func(t *testing.T, dir, target string) {
				if err := os.WriteFile(target, []byte("user data\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(dir, FileName)); err != nil {
					t.Fatal(err)
				}
			}, "symbolic link"},
			{"dangling symlink", func(t *testing.T, dir, target string) {
				if err := os.Symlink(target, filepath.Join(dir, FileName)); err != nil {
					t.Fatal(err)
				}
			}, "symbolic link"},
			{"fifo", func(t *testing.T, dir, target string) {
				if err := syscall.Mkfifo(filepath.Join(dir, FileName), 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			}, "not a regular file"},
			{"directory", func(t *testing.T, dir, target string) {
				if err := os.Mkdir(filepath.Join(dir, FileName), 0o755); err != nil {
					t.Fatal(err)
				}
			}, "not a regular file"},
		} {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				dir, other := t.TempDir(), t.TempDir()
				target := filepath.Join(other, "victim")
				c.make(t, dir, target)
				before, _ := os.ReadFile(target)
				var logs bytes.Buffer
				lk, err := acquire(dir, logTo(&logs), m.flock)
				if err == nil {
					lk.Release()
					t.Fatal("acquire succeeded through a non-regular lock path")
				}
				if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
					t.Errorf("err = %v; want it to name the lock file and say %q", err, c.want)
				}
				after, aerr := os.ReadFile(target)
				if !bytes.Equal(before, after) {
					t.Errorf("target changed: %q → %q", before, after)
				}
				if len(before) == 0 && aerr == nil {
					t.Errorf("the dangling link's target %s was created", target)
				}
				if _, err := os.Lstat(filepath.Join(dir, FileName)); err != nil {
					t.Errorf("the lock path was removed: %v", err)
				}
			})
		}
	}
}

// TestCheckNoticesLoss: Check passes while the lock file is the holder's
// and reports a *LostError once it is removed (and a second trainer takes
// the directory) or replaced by another file.
func TestCheckNoticesLoss(t *testing.T) {
	for _, m := range modes() {
		for _, c := range []struct {
			name string
			do   func(t *testing.T, path string)
			want string
		}{
			{"removed", func(t *testing.T, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}, "removed"},
			{"replaced", func(t *testing.T, path string) {
				tmp := path + ".new"
				if err := os.WriteFile(tmp, []byte(holderJSON(os.Getpid(), hostname(t))), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			}, "replaced"},
			{"rewritten", func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte(holderJSON(1, "elsewhere")), 0o644); err != nil {
					t.Fatal(err)
				}
			}, "now names pid 1 on host elsewhere"},
		} {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				var logs bytes.Buffer
				lk, err := acquire(dir, logTo(&logs), m.flock)
				if err != nil {
					t.Fatal(err)
				}
				defer lk.Release()
				if err := lk.Check(); err != nil {
					t.Fatalf("Check on a held lock: %v", err)
				}
				c.do(t, lk.Path())
				err = lk.Check()
				var le *LostError
				if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Check after the lock file was %s = %v; want a LostError saying %q", c.name, err, c.want)
				}
			})
		}
	}
}

// TestCheckAfterRelease: a released lock is reported lost, and a nil one
// too (Check never panics).
func TestCheckAfterRelease(t *testing.T) {
	lk, err := Acquire(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
	var le *LostError
	if err := lk.Check(); !errors.As(err, &le) {
		t.Errorf("Check after Release = %v; want a LostError", err)
	}
}

// TestLockFile: a second LockFile on the same path waits for the first to
// release it (and gives up after its wait, naming the file); a symbolic
// link at the path is refused.
func TestLockFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	a, err := LockFile(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockFile(path, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("second LockFile while held: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		b, err := LockFile(path, 10*time.Second)
		if err == nil {
			err = b.Release()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := LockFile(link, time.Second); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("LockFile through a link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the link's target was created")
	}
}

// TestCheckSkipsReadOnlyWhenSettled: once the lock file's modification
// time lies settled before a read that found this process, Check skips
// the read while the size and time stay (the trainer's per-step check);
// a rewrite after that read (a new time) or of another size is read and
// reported, and a file written recently is read at every Check.
func TestCheckSkipsReadOnlyWhenSettled(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	for _, c := range []struct {
		name    string
		mtime   time.Time // the lock file's time before the first Check
		rewrite func(t *testing.T, path string, pid int)
		cached  bool   // the first Check remembers the file
		want    string // "" = the second Check passes
	}{
		{"recent file, rewritten same size and time", time.Now(), func(t *testing.T, path string, pid int) {
			writeSameTime(t, path, holderJSON(otherPID(pid), hostname(t)))
		}, false, "now names"},
		{"settled file, rewritten now", old, func(t *testing.T, path string, pid int) {
			if err := os.WriteFile(path, []byte(holderJSON(otherPID(pid), hostname(t))), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true, "now names"},
		{"settled file, truncated, time kept", old, func(t *testing.T, path string, pid int) {
			writeSameTime(t, path, "")
		}, true, "no longer names"},
		{"settled file untouched", old, func(*testing.T, string, int) {}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			lk, err := Acquire(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Release()
			if err := os.Chtimes(lk.Path(), c.mtime, c.mtime); err != nil {
				t.Fatal(err)
			}
			if err := lk.Check(); err != nil {
				t.Fatalf("first Check: %v", err)
			}
			if lk.read.ok != c.cached {
				t.Errorf("after the first Check: remembered %v, want %v", lk.read.ok, c.cached)
			}
			c.rewrite(t, lk.Path(), os.Getpid())
			err = lk.Check()
			var le *LostError
			switch {
			case c.want == "" && err != nil:
				t.Errorf("second Check: %v", err)
			case c.want != "" && (!errors.As(err, &le) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("second Check = %v; want a LostError saying %q", err, c.want)
			}
		})
	}
}

// writeSameTime rewrites path with content and puts its modification time
// back.
func writeSameTime(t *testing.T, path, content string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// otherPID is a pid of as many digits as pid, not pid.
func otherPID(pid int) int {
	if pid%10 == 9 {
		return pid - 1
	}
	return pid + 1
}

// BenchmarkCheck is the trainer's per-step lock check on a lock file
// taken an hour ago (its read skipped: two stat calls).
func BenchmarkCheck(b *testing.B) {
	lk, err := Acquire(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer lk.Release()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lk.Path(), old, old); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := lk.Check(); err != nil {
			b.Fatal(err)
		}
	}
}
