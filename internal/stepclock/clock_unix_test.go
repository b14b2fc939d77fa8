//go:build linux

package stepclock

import (
	"os"
	"runtime"
	"strconv"
	"testing"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// taskIDs lists this process's threads.
func taskIDs(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range ents {
		ids[e.Name()] = true
	}
	return ids
}

// TestCounterFilesKeptOpen: the clock's /proc files are opened once and
// re-read in place (no file opened again, the descriptor count steady over
// many reads), a thread that exits is dropped with its file, a new thread
// is picked up, and close releases every file.
func TestCounterFilesKeptOpen(t *testing.T) {
	var cf counterFiles
	before := openFDs(t)
	h := cf.read()
	if !h.statOK || !h.rusageOK {
		t.Fatalf("first read: /proc/stat %v, getrusage %v", h.statOK, h.rusageOK)
	}
	if !h.delayOK {
		t.Skip("no schedstat on this kernel")
	}
	files := map[string]*os.File{}
	for tid, f := range cf.threads {
		files[tid] = f
	}
	fds := openFDs(t)
	for range 100 {
		if h := cf.read(); !h.delayOK || !h.statOK || h.runDelay < 0 {
			t.Fatalf("re-read: %+v", h)
		}
	}
	if got := openFDs(t); got > fds+2 { // the runtime may start a thread meanwhile
		t.Errorf("100 reads: %d open descriptors, %d after the first read", got, fds)
	}
	for tid, f := range files {
		if g, ok := cf.threads[tid]; ok && g != f {
			t.Errorf("thread %s: its schedstat was opened again", tid)
		}
	}

	// A goroutine locked to its thread that returns without unlocking
	// ends that thread: the next read drops it.
	tidc, done, exited := make(chan string), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		runtime.LockOSThread()
		tidc <- strconv.Itoa(gettid())
		<-done
	}()
	tid := <-tidc
	cf.read()
	if cf.threads[tid] == nil {
		t.Errorf("new thread %s not read (threads %v)", tid, keys(cf.threads))
	}
	close(done)
	<-exited
	for i := 0; i < 200 && taskIDs(t)[tid]; i++ {
		runtime.Gosched()
	}
	if taskIDs(t)[tid] {
		t.Skipf("thread %s has not exited yet", tid)
	}
	cf.read()
	if cf.threads[tid] != nil {
		t.Errorf("thread %s exited but its schedstat is still open", tid)
	}
	for id := range cf.threads {
		if !taskIDs(t)[id] {
			t.Errorf("thread %s is not in /proc/self/task but still read", id)
		}
	}
	cf.close()
	if got := openFDs(t); got > before+1 {
		t.Errorf("after close: %d open descriptors, %d before the first read", got, before)
	}
}

func keys(m map[string]*os.File) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
