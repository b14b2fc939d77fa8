package runlock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func logTo(b *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown"
	}
	return h
}

// deadPID returns the pid of a process that has exited (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	pid := cmd.Process.Pid
	if pidAlive(pid) {
		t.Skipf("pid %d was reused already", pid)
	}
	return pid
}

func writeLock(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func holderJSON(pid int, host string) string {
	return fmt.Sprintf(`{"pid":%d,"host":%q,"started":"2026-01-02T03:04:05Z"}`+"\n", pid, host)
}

func modes() []struct {
	name  string
	flock bool
} {
	return []struct {
		name  string
		flock bool
	}{{"flock", true}, {"pid-fallback", false}}
}

// TestSecondAcquireRefused: a held lock refuses a second taker with an
// error naming the holder's pid and host and the lock file; after Release
// the file is gone and the lock can be taken again.
func TestSecondAcquireRefused(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := acquire(dir, nil, m.flock)
			if err != nil {
				t.Fatal(err)
			}
			if !l.Holds(dir) || l.Holds(t.TempDir()) {
				t.Errorf("Holds: wrong answer for %s", dir)
			}
			b, _ := os.ReadFile(filepath.Join(dir, FileName))
			if !strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid())) {
				t.Errorf("lock file %q does not name this pid", b)
			}
			_, err = acquire(dir, nil, m.flock)
			var held *HeldError
			if !errors.As(err, &held) {
				t.Fatalf("second acquire: %v, want a HeldError", err)
			}
			for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), "host " + hostname(t), filepath.Join(dir, FileName)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(dir, FileName)); !bytes.Equal(got, b) {
				t.Errorf("the refused taker changed the lock file: %q -> %q", b, got)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			if err := l.Release(); err != nil {
				t.Errorf("second Release: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName)); !os.IsNotExist(err) {
				t.Errorf("lock file left after Release: %v", err)
			}
			l2, err := acquire(dir, nil, m.flock)
			if err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
			l2.Release()
		})
	}
}

// TestLeftoverLockFiles: what is decided about a lock file nobody holds a
// flock on, by what it says.
func TestLeftoverLockFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses exec true")
	}
	dead := deadPID(t)
	live := os.Getppid() // the go command or the shell: alive, not us
	for _, c := range []struct {
		name     string
		content  string
		flock    bool
		takeOver bool
		want     string // in the error, or in the log on take-over
	}{
		{"dead pid, flock", holderJSON(dead, hostname(t)), true, true, "previous_pid=" + strconv.Itoa(dead)},
		{"dead pid, pid-fallback", holderJSON(dead, hostname(t)), false, true, "previous_pid=" + strconv.Itoa(dead)},
		// With flock the released flock is the proof: a live pid in the file
		// is a reused pid.
		{"live pid, flock free", holderJSON(live, hostname(t)), true, true, "previous_pid=" + strconv.Itoa(live)},
		{"live pid, pid-fallback", holderJSON(live, hostname(t)), false, false, "pid " + strconv.Itoa(live)},
		{"other host, flock", holderJSON(dead, "elsewhere.example"), true, false, "another host"},
		{"other host, pid-fallback", holderJSON(dead, "elsewhere.example"), false, false, "another host"},
		{"empty, flock", "", true, true, "names no holder"},
		{"garbage, flock", "{{{", true, true, "names no holder"},
		{"empty, pid-fallback", "", false, false, "cannot be read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLock(t, dir, c.content)
			var log bytes.Buffer
			l, err := acquire(dir, logTo(&log), c.flock)
			if !c.takeOver {
				var held *HeldError
				if !errors.As(err, &held) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
					t.Fatalf("got %v, want a HeldError naming %q and the file", err, c.want)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, FileName)); string(b) != c.content {
					t.Errorf("refused taker changed the lock file to %q", b)
				}
				return
			}
			if err != nil {
				t.Fatalf("stale lock not taken over: %v", err)
			}
			defer l.Release()
			if !strings.Contains(log.String(), "taking over") || !strings.Contains(log.String(), c.want) {
				t.Errorf("take-over not logged with %q: %s", c.want, log.String())
			}
			if h, err := readLockFile(dir); err != nil || h.PID != os.Getpid() {
				t.Errorf("lock file after take-over: %+v %v", h, err)
			}
		})
	}
}

func readLockFile(dir string) (Holder, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		return Holder{}, err
	}
	defer f.Close()
	return readHolder(f)
}

// TestHelperHoldLock is not a test: TestKilledHolder runs the test binary
// with it to hold a lock in another process.
func TestHelperHoldLock(t *testing.T) {
	dir := os.Getenv("RUNLOCK_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	if _, err := Acquire(dir, nil); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestKilledHolder: a lock held by a live process in another process is
// refused, naming it; once that process is killed with SIGKILL (no chance
// to release anything) the lock is taken over and the take-over logged.
func TestKilledHolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	cmd.Env = append(os.Environ(), "RUNLOCK_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper: %q %v", line, err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	_, err = Acquire(dir, nil)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.PID != cmd.Process.Pid || !strings.Contains(err.Error(), "pid "+pid) || !strings.Contains(err.Error(), "host "+hostname(t)) {
		t.Fatalf("lock held by live pid %s: got %v", pid, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	var log bytes.Buffer
	l, err := Acquire(dir, logTo(&log))
	if err != nil {
		t.Fatalf("after kill -9 of the holder: %v", err)
	}
	defer l.Release()
	if !strings.Contains(log.String(), "stale") || !strings.Contains(log.String(), "previous_pid="+pid) {
		t.Errorf("take-over not logged naming pid %s: %s", pid, log.String())
	}
}

// TestAcquireMissingDir: the directory must exist; the error names it.
func TestAcquireMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	if _, err := Acquire(dir, nil); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("got %v", err)
	}
}
