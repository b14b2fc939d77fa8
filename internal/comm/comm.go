// Package comm is one process's view of a group of ranks: the collectives
// kestrel's data-parallel trainer and distributed preparation use.
//
// Three implementations share the Comm interface: Single (one rank, every
// collective a copy), Local (n in-process ranks for unit tests) and, in a
// binary built with the build tag mpi (make build-mpi), Open MPI through cgo.
// FromEnv picks the right one for how the process was launched.
//
// Reduction order: Single and Local reduce the contributions in rank order
// 0, 1, …, N−1 ((x0+x1)+x2)+…, the same on every rank, so every rank holds
// bit-identical results. Open MPI's allreduce is bit-identical across ranks
// as well; for two ranks a+b is exact and order-free, for more ranks the
// association depends on Open MPI's algorithm (see docs/distributed.md).
package comm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Comm is one process's view of a group of ranks. Every rank must call the
// collectives in the same order with compatible arguments.
type Comm interface {
	// Rank is this process's index in [0, Size()).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// Host is the hostname of this rank.
	Host() string
	// AllReduceF32 sums buf elementwise over all ranks, in place.
	AllReduceF32(buf []float32) error
	// IAllReduceF32 starts AllReduceF32 without waiting; buf must not be
	// touched until the Request's Wait returns.
	IAllReduceF32(buf []float32) (Request, error)
	// AllReduceF64 reduces buf elementwise with op (Sum, Max, Min), in place.
	AllReduceF64(buf []float64, op Op) error
	// AllReduceI64 reduces buf elementwise with op (Sum, Max, Min), in place.
	AllReduceI64(buf []int64, op Op) error
	// Bcast copies root's buf into every rank's buf (same length on all ranks).
	Bcast(buf []byte, root int) error
	// BcastBytes returns root's b on every rank (any length).
	BcastBytes(b []byte, root int) ([]byte, error)
	// GatherBytes returns, on root, every rank's b indexed by rank; nil elsewhere.
	GatherBytes(b []byte, root int) ([][]byte, error)
	// AllGatherBytes returns every rank's b indexed by rank, on every rank.
	AllGatherBytes(b []byte) ([][]byte, error)
	// AllToAllBytes sends send[r] to rank r and returns what each rank sent
	// to this one, indexed by sender.
	AllToAllBytes(send [][]byte) ([][]byte, error)
	// Barrier returns once every rank has entered it.
	Barrier() error
	// Abort ends the whole job with the exit code.
	Abort(code int)
	// Close finalizes this rank's part of the group.
	Close() error
}

// Request is a started non-blocking collective.
type Request interface {
	// Wait blocks until the collective is complete on this rank.
	Wait() error
}

// Op is a reduction operator.
type Op int

// The reduction operators.
const (
	Sum Op = iota
	Max
	Min
)

// String names the operator.
func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// TimeoutSetter is implemented by Comms whose collectives can give up after a
// deadline (Local and the MPI Comm): a collective that some rank never
// reaches returns a *HangError instead of blocking forever. Zero disables.
type TimeoutSetter interface {
	SetTimeout(d time.Duration)
}

// SetTimeout sets c's collective timeout when c supports one; it reports
// whether it did.
func SetTimeout(c Comm, d time.Duration) bool {
	if t, ok := c.(TimeoutSetter); ok {
		t.SetTimeout(d)
		return true
	}
	return false
}

// HangError is a collective that did not complete within the timeout. Missing
// lists the ranks known not to have reached it (with their hosts when known);
// it is empty when this rank cannot tell (then rank 0's error names them).
type HangError struct {
	Op      string        // the collective, e.g. "allreduce_f32"
	Seq     int64         // this rank's collective sequence number (0-based)
	Rank    int           // the rank that timed out
	Timeout time.Duration // the timeout that expired
	Missing []int         // ranks that never reached collective Seq
	Hosts   []string      // Hosts[i] is the host of Missing[i] ("" when unknown)
}

// Error names the collective and the ranks that did not reach it.
func (e *HangError) Error() string {
	s := fmt.Sprintf("comm: rank %d: %s (collective #%d) did not complete within %v", e.Rank, e.Op, e.Seq, e.Timeout)
	if len(e.Missing) == 0 {
		return s + "; the ranks that did not reach it are unknown to this rank"
	}
	s += "; never reached by"
	for i, r := range e.Missing {
		h := ""
		if i < len(e.Hosts) && e.Hosts[i] != "" {
			h = " on " + e.Hosts[i]
		}
		s += fmt.Sprintf(" rank %d%s", r, h)
		if i < len(e.Missing)-1 {
			s += ","
		}
	}
	return s
}

// ErrAborted is returned by collectives of a Local group after Abort.
var ErrAborted = errors.New("comm: the group was aborted")

// ErrNoMPI is FromEnv's error in a binary built without MPI that was
// launched with more than one rank.
var ErrNoMPI = errors.New("this binary was built without MPI; build bin/kestrel-mpi with make build-mpi")

// mpiOpen initializes MPI; it is set by the mpi build (comm_mpi.go) and nil
// in the default build.
var mpiOpen func() (Comm, error)

// MPIBuilt reports whether this binary was built with MPI (-tags mpi).
func MPIBuilt() bool { return mpiOpen != nil }

// FromEnv returns the group this process was launched in: the MPI Comm in a
// binary built with -tags mpi (size 1 when not launched by mpirun or srun),
// Single in the default build. A default build launched with more than one
// rank returns an error wrapping ErrNoMPI naming the variable that said so.
func FromEnv() (Comm, error) {
	if mpiOpen != nil {
		return mpiOpen()
	}
	if err := CheckNoMPILaunch(); err != nil {
		return nil, err
	}
	return Single(), nil
}

// hostname is os.Hostname with a fallback.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}
