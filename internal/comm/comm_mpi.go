//go:build mpi && cgo

package comm

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>

static int k_init(int *provided) {
	int inited = 0;
	MPI_Initialized(&inited);
	if (inited) { MPI_Query_thread(provided); return MPI_SUCCESS; }
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
}
static int k_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int k_size(int *n) { return MPI_Comm_size(MPI_COMM_WORLD, n); }
static int k_errors_return(void) { return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); }
static int k_iallreduce_f32(float *buf, int n, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
}
static MPI_Op k_op(int op) { return op == 1 ? MPI_MAX : (op == 2 ? MPI_MIN : MPI_SUM); }
static int k_iallreduce_f64(double *buf, int n, int op, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, k_op(op), MPI_COMM_WORLD, req);
}
static int k_iallreduce_i64(long long *buf, int n, int op, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_LONG_LONG, k_op(op), MPI_COMM_WORLD, req);
}
static int k_ibcast(void *buf, int n, int root, MPI_Request *req) {
	return MPI_Ibcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD, req);
}
static int k_ibarrier(MPI_Request *req) { return MPI_Ibarrier(MPI_COMM_WORLD, req); }
static int k_iallgather_int(int *send, int *recv, MPI_Request *req) {
	return MPI_Iallgather(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD, req);
}
static int k_igather_int(int *send, int *recv, int root, MPI_Request *req) {
	return MPI_Igather(send, 1, MPI_INT, recv, 1, MPI_INT, root, MPI_COMM_WORLD, req);
}
static int k_igatherv(void *send, int n, void *recv, int *counts, int *displs, int root, MPI_Request *req) {
	return MPI_Igatherv(send, n, MPI_BYTE, recv, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD, req);
}
static int k_iallgatherv(void *send, int n, void *recv, int *counts, int *displs, MPI_Request *req) {
	return MPI_Iallgatherv(send, n, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD, req);
}
static int k_ialltoall_int(int *send, int *recv, MPI_Request *req) {
	return MPI_Ialltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD, req);
}
static int k_ialltoallv(void *send, int *scounts, int *sdispls, void *recv, int *rcounts, int *rdispls, MPI_Request *req) {
	return MPI_Ialltoallv(send, scounts, sdispls, MPI_BYTE, recv, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD, req);
}
static int k_test(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }
static void k_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
static int k_finalize(void) { int f = 0; MPI_Finalized(&f); if (f) return MPI_SUCCESS; return MPI_Finalize(); }
static int k_error_string(int code, char *buf) { int n = 0; MPI_Error_string(code, buf, &n); return n; }
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

func init() { mpiOpen = openMPI }

// spinWait is how long Wait tests a collective back to back before it
// sleeps between tests.
const spinWait = 2 * time.Second

// mpiComm is MPI_COMM_WORLD. Every MPI call holds mu (MPI_THREAD_SERIALIZED);
// every collective is started non-blocking and completed by polling
// MPI_Test, so a collective some rank never reaches can time out (SetTimeout)
// instead of hanging, and the side channel (progress.go) names that rank.
type mpiComm struct {
	mu      sync.Mutex
	rank    int
	size    int
	host    string
	hosts   []string
	seq     int64 // collectives this rank has started
	timeout time.Duration
	prog    *progress
	closed  bool
}

var (
	openOnce sync.Once
	opened   *mpiComm
	openErr  error
)

// openMPI initializes MPI once per process.
func openMPI() (Comm, error) {
	openOnce.Do(func() { opened, openErr = initMPI() })
	return opened, openErr
}

func mpiErr(what string, code C.int) error {
	if code == C.MPI_SUCCESS {
		return nil
	}
	buf := (*C.char)(C.malloc(C.MPI_MAX_ERROR_STRING))
	defer C.free(unsafe.Pointer(buf))
	n := C.k_error_string(code, buf)
	return fmt.Errorf("comm: %s: MPI error %d: %s", what, int(code), C.GoStringN(buf, n))
}

func initMPI() (*mpiComm, error) {
	var provided C.int
	if err := mpiErr("MPI_Init_thread", C.k_init(&provided)); err != nil {
		return nil, err
	}
	if provided < C.MPI_THREAD_SERIALIZED {
		return nil, fmt.Errorf("comm: Open MPI gave thread level %d, kestrel needs MPI_THREAD_SERIALIZED", int(provided))
	}
	if err := mpiErr("MPI_Comm_set_errhandler", C.k_errors_return()); err != nil {
		return nil, err
	}
	var r, n C.int
	if err := mpiErr("MPI_Comm_rank", C.k_rank(&r)); err != nil {
		return nil, err
	}
	if err := mpiErr("MPI_Comm_size", C.k_size(&n)); err != nil {
		return nil, err
	}
	c := &mpiComm{rank: int(r), size: int(n), host: hostname()}
	hs, err := c.AllGatherBytes([]byte(c.host))
	if err != nil {
		return nil, fmt.Errorf("comm: exchanging host names: %w", err)
	}
	for _, h := range hs {
		c.hosts = append(c.hosts, string(h))
	}
	if c.size > 1 {
		p, err := startProgress(c)
		if err != nil {
			return nil, err
		}
		c.prog = p
	}
	return c, nil
}

func (c *mpiComm) Rank() int    { return c.rank }
func (c *mpiComm) Size() int    { return c.size }
func (c *mpiComm) Host() string { return c.host }

// SetTimeout bounds how long a collective may wait for the other ranks.
func (c *mpiComm) SetTimeout(d time.Duration) {
	c.mu.Lock()
	c.timeout = d
	c.mu.Unlock()
}

// mpiRequest is a started collective: its MPI_Request (in C memory), the
// Go buffers pinned until it completes, and what to do once it has.
type mpiRequest struct {
	c      *mpiComm
	op     string
	seq    int64
	req    *C.MPI_Request
	pin    runtime.Pinner
	done   bool
	err    error
	finish func() error
}

// start runs f (which starts one non-blocking MPI collective into req)
// under the lock and records the collective's sequence number.
func (c *mpiComm) start(op string, pins []unsafe.Pointer, f func(req *C.MPI_Request) C.int) (*mpiRequest, error) {
	r := &mpiRequest{c: c, op: op, req: (*C.MPI_Request)(C.malloc(C.size_t(unsafe.Sizeof(C.MPI_Request(nil)))))}
	for _, p := range pins {
		if p != nil {
			r.pin.Pin(p)
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		r.release()
		return nil, fmt.Errorf("comm: %s after Close", op)
	}
	r.seq = c.seq
	c.seq++
	code := f(r.req)
	c.mu.Unlock()
	if c.prog != nil {
		c.prog.reached(r.seq + 1)
	}
	if err := mpiErr(op, code); err != nil {
		r.release()
		return nil, err
	}
	return r, nil
}

func (r *mpiRequest) release() {
	r.pin.Unpin()
	if r.req != nil {
		C.free(unsafe.Pointer(r.req))
		r.req = nil
	}
}

// Wait polls MPI_Test until the collective completes or the timeout
// expires; a timeout returns a *HangError naming the ranks that have not
// reached this collective (from rank 0's progress table).
func (r *mpiRequest) Wait() error {
	if r.done {
		return r.err
	}
	c := r.c
	c.mu.Lock()
	d := c.timeout
	c.mu.Unlock()
	start := time.Now()
	sleep := time.Duration(0)
	for {
		var flag C.int
		c.mu.Lock()
		code := C.k_test(r.req, &flag)
		c.mu.Unlock()
		if err := mpiErr(r.op, code); err != nil {
			r.done, r.err = true, err
			r.release()
			return err
		}
		if flag != 0 {
			r.release()
			r.done = true
			if r.finish != nil {
				r.err = r.finish()
			}
			return r.err
		}
		if d > 0 && time.Since(start) > d {
			// The request stays pinned: MPI may still write into it.
			e := &HangError{Op: r.op, Seq: r.seq, Rank: c.rank, Timeout: d}
			if c.prog != nil {
				e.Missing = c.prog.behind(r.seq + 1)
				for _, m := range e.Missing {
					e.Hosts = append(e.Hosts, c.hosts[m])
				}
			}
			r.done, r.err = true, e
			return e
		}
		// Open MPI progresses a non-blocking collective only inside MPI
		// calls, so a waiting rank keeps testing (as a blocking MPI call
		// spins); after spinWait it backs off to at most 200µs sleeps, so
		// a long wait (a slow or hung rank) leaves the core to others.
		if time.Since(start) > spinWait {
			sleep = min(max(2*sleep, 5*time.Microsecond), 200*time.Microsecond)
			time.Sleep(sleep)
		} else {
			runtime.Gosched()
		}
	}
}

// Test advances the collective without blocking and reports whether it is
// complete; the trainer calls it between layers so communication progresses
// while it computes.
func (r *mpiRequest) Test() bool {
	if r.done {
		return true
	}
	var flag C.int
	r.c.mu.Lock()
	code := C.k_test(r.req, &flag)
	r.c.mu.Unlock()
	return code == C.MPI_SUCCESS && flag != 0
}

func count(n int, what string) (C.int, error) {
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("comm: %s of %d elements exceeds MPI's int count", what, n)
	}
	return C.int(n), nil
}

func ptrF32(b []float32) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func ptrBytes(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (c *mpiComm) IAllReduceF32(buf []float32) (Request, error) {
	n, err := count(len(buf), "allreduce_f32")
	if err != nil {
		return nil, err
	}
	p := ptrF32(buf)
	return c.start("allreduce_f32", []unsafe.Pointer{p}, func(req *C.MPI_Request) C.int {
		return C.k_iallreduce_f32((*C.float)(p), n, req)
	})
}

func (c *mpiComm) AllReduceF32(buf []float32) error {
	r, err := c.IAllReduceF32(buf)
	if err != nil {
		return err
	}
	return r.Wait()
}

func (c *mpiComm) AllReduceF64(buf []float64, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	n, err := count(len(buf), "allreduce_f64")
	if err != nil {
		return err
	}
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	r, err := c.start("allreduce_f64_"+op.String(), []unsafe.Pointer{p}, func(req *C.MPI_Request) C.int {
		return C.k_iallreduce_f64((*C.double)(p), n, C.int(op), req)
	})
	if err != nil {
		return err
	}
	return r.Wait()
}

func (c *mpiComm) AllReduceI64(buf []int64, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	n, err := count(len(buf), "allreduce_i64")
	if err != nil {
		return err
	}
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	r, err := c.start("allreduce_i64_"+op.String(), []unsafe.Pointer{p}, func(req *C.MPI_Request) C.int {
		return C.k_iallreduce_i64((*C.longlong)(p), n, C.int(op), req)
	})
	if err != nil {
		return err
	}
	return r.Wait()
}

func (c *mpiComm) Bcast(buf []byte, root int) error {
	if err := checkRoot(root, c.size); err != nil {
		return err
	}
	n, err := count(len(buf), "bcast")
	if err != nil {
		return err
	}
	p := ptrBytes(buf)
	r, err := c.start("bcast", []unsafe.Pointer{p}, func(req *C.MPI_Request) C.int {
		return C.k_ibcast(p, n, C.int(root), req)
	})
	if err != nil {
		return err
	}
	return r.Wait()
}

func (c *mpiComm) BcastBytes(b []byte, root int) ([]byte, error) {
	if err := checkRoot(root, c.size); err != nil {
		return nil, err
	}
	ln := make([]int64, 1)
	if c.rank == root {
		ln[0] = int64(len(b))
	} else {
		ln[0] = math.MinInt64
	}
	if err := c.AllReduceI64(ln, Max); err != nil {
		return nil, err
	}
	out := make([]byte, ln[0])
	if c.rank == root {
		copy(out, b)
	}
	if err := c.Bcast(out, root); err != nil {
		return nil, err
	}
	return out, nil
}

// counts returns the displacements of counts and their total.
func displs(counts []C.int) ([]C.int, int) {
	d := make([]C.int, len(counts))
	t := 0
	for i, n := range counts {
		d[i] = C.int(t)
		t += int(n)
	}
	return d, t
}

func split(buf []byte, counts, dis []C.int) [][]byte {
	out := make([][]byte, len(counts))
	for i := range counts {
		out[i] = append([]byte{}, buf[dis[i]:int(dis[i])+int(counts[i])]...)
	}
	return out
}

func (c *mpiComm) GatherBytes(b []byte, root int) ([][]byte, error) {
	if err := checkRoot(root, c.size); err != nil {
		return nil, err
	}
	n, err := count(len(b), "gather_bytes")
	if err != nil {
		return nil, err
	}
	send := []C.int{n}
	counts := make([]C.int, c.size)
	r, err := c.start("gather_bytes_len", []unsafe.Pointer{unsafe.Pointer(&send[0]), unsafe.Pointer(&counts[0])}, func(req *C.MPI_Request) C.int {
		return C.k_igather_int(&send[0], &counts[0], C.int(root), req)
	})
	if err != nil {
		return nil, err
	}
	if err := r.Wait(); err != nil {
		return nil, err
	}
	dis, total := displs(counts)
	if c.rank != root {
		total = 0
	}
	recv := make([]byte, max(total, 1))
	sp := ptrBytes(b)
	r, err = c.start("gather_bytes", []unsafe.Pointer{sp, unsafe.Pointer(&recv[0]), unsafe.Pointer(&counts[0]), unsafe.Pointer(&dis[0])}, func(req *C.MPI_Request) C.int {
		return C.k_igatherv(sp, n, unsafe.Pointer(&recv[0]), &counts[0], &dis[0], C.int(root), req)
	})
	if err != nil {
		return nil, err
	}
	if err := r.Wait(); err != nil || c.rank != root {
		return nil, err
	}
	return split(recv, counts, dis), nil
}

func (c *mpiComm) AllGatherBytes(b []byte) ([][]byte, error) {
	n, err := count(len(b), "allgather_bytes")
	if err != nil {
		return nil, err
	}
	send := []C.int{n}
	counts := make([]C.int, c.size)
	r, err := c.start("allgather_bytes_len", []unsafe.Pointer{unsafe.Pointer(&send[0]), unsafe.Pointer(&counts[0])}, func(req *C.MPI_Request) C.int {
		return C.k_iallgather_int(&send[0], &counts[0], req)
	})
	if err != nil {
		return nil, err
	}
	if err := r.Wait(); err != nil {
		return nil, err
	}
	dis, total := displs(counts)
	recv := make([]byte, max(total, 1))
	sp := ptrBytes(b)
	r, err = c.start("allgather_bytes", []unsafe.Pointer{sp, unsafe.Pointer(&recv[0]), unsafe.Pointer(&counts[0]), unsafe.Pointer(&dis[0])}, func(req *C.MPI_Request) C.int {
		return C.k_iallgatherv(sp, n, unsafe.Pointer(&recv[0]), &counts[0], &dis[0], req)
	})
	if err != nil {
		return nil, err
	}
	if err := r.Wait(); err != nil {
		return nil, err
	}
	return split(recv, counts, dis), nil
}

func (c *mpiComm) AllToAllBytes(send [][]byte) ([][]byte, error) {
	if len(send) != c.size {
		return nil, fmt.Errorf("comm: alltoall: rank %d has %d send buffers for a group of %d ranks", c.rank, len(send), c.size)
	}
	scounts := make([]C.int, c.size)
	var flat []byte
	for i, b := range send {
		n, err := count(len(b), "alltoall_bytes")
		if err != nil {
			return nil, err
		}
		scounts[i] = n
		flat = append(flat, b...)
	}
	flat = append(flat, 0) // never empty, so &flat[0] exists
	rcounts := make([]C.int, c.size)
	r, err := c.start("alltoall_bytes_len", []unsafe.Pointer{unsafe.Pointer(&scounts[0]), unsafe.Pointer(&rcounts[0])}, func(req *C.MPI_Request) C.int {
		return C.k_ialltoall_int(&scounts[0], &rcounts[0], req)
	})
	if err != nil {
		return nil, err
	}
	if err := r.Wait(); err != nil {
		return nil, err
	}
	sdis, _ := displs(scounts)
	rdis, total := displs(rcounts)
	recv := make([]byte, total+1)
	pins := []unsafe.Pointer{unsafe.Pointer(&flat[0]), unsafe.Pointer(&scounts[0]), unsafe.Pointer(&sdis[0]), unsafe.Pointer(&recv[0]), unsafe.Pointer(&rcounts[0]), unsafe.Pointer(&rdis[0])}
	r, err = c.start("alltoall_bytes", pins, func(req *C.MPI_Request) C.int {
		return C.k_ialltoallv(unsafe.Pointer(&flat[0]), &scounts[0], &sdis[0], unsafe.Pointer(&recv[0]), &rcounts[0], &rdis[0], req)
	})
	if err != nil {
		return nil, err
	}
	if err := r.Wait(); err != nil {
		return nil, err
	}
	return split(recv, rcounts, rdis), nil
}

func (c *mpiComm) Barrier() error {
	r, err := c.start("barrier", nil, func(req *C.MPI_Request) C.int { return C.k_ibarrier(req) })
	if err != nil {
		return err
	}
	return r.Wait()
}

// Abort kills every rank of the job with code (MPI_Abort).
func (c *mpiComm) Abort(code int) {
	c.mu.Lock()
	C.k_abort(C.int(code))
	c.mu.Unlock()
}

// Close finalizes MPI after a barrier; later collectives return an error.
func (c *mpiComm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if c.prog != nil {
		c.prog.close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return mpiErr("MPI_Finalize", C.k_finalize())
}
