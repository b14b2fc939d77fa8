package comm

import (
	"fmt"
	"os"
)

// single is the size-1 group.
type single struct{ host string }

// Single returns a group of one rank: reductions leave buf as it is, the
// byte collectives return copies.
func Single() Comm { return &single{host: hostname()} }

func (s *single) Rank() int    { return 0 }
func (s *single) Size() int    { return 1 }
func (s *single) Host() string { return s.host }

func (s *single) AllReduceF32(buf []float32) error { return nil }

func (s *single) IAllReduceF32(buf []float32) (Request, error) { return doneRequest{}, nil }

func (s *single) AllReduceF64(buf []float64, op Op) error { return checkOp(op) }

func (s *single) AllReduceI64(buf []int64, op Op) error { return checkOp(op) }

func (s *single) Bcast(buf []byte, root int) error { return checkRoot(root, 1) }

func (s *single) BcastBytes(b []byte, root int) ([]byte, error) {
	if err := checkRoot(root, 1); err != nil {
		return nil, err
	}
	return clone(b), nil
}

func (s *single) GatherBytes(b []byte, root int) ([][]byte, error) {
	if err := checkRoot(root, 1); err != nil {
		return nil, err
	}
	return [][]byte{clone(b)}, nil
}

func (s *single) AllGatherBytes(b []byte) ([][]byte, error) { return [][]byte{clone(b)}, nil }

func (s *single) AllToAllBytes(send [][]byte) ([][]byte, error) {
	if len(send) != 1 {
		return nil, fmt.Errorf("comm: alltoall: %d send buffers for a group of 1 rank", len(send))
	}
	return [][]byte{clone(send[0])}, nil
}

func (s *single) Barrier() error { return nil }
func (s *single) Abort(code int) { os.Exit(code) }
func (s *single) Close() error   { return nil }

// doneRequest is a Request that is already complete.
type doneRequest struct{}

func (doneRequest) Wait() error { return nil }

func checkOp(op Op) error {
	if op < Sum || op > Min {
		return fmt.Errorf("comm: unknown reduction %v", op)
	}
	return nil
}

func checkRoot(root, size int) error {
	if root < 0 || root >= size {
		return fmt.Errorf("comm: root %d outside [0, %d)", root, size)
	}
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append([]byte(nil), b...)
}
