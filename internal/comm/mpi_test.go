//go:build mpi && cgo

package comm

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"
)

// TestMPI runs under mpirun (make test-mpi): go test -c -tags mpi, then
// mpirun -np 2 comm.test -test.run MPI. Launched alone it skips.
func TestMPI(t *testing.T) {
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.Size() < 2 {
		t.Skip("not launched by mpirun with ≥ 2 ranks")
	}
	r, n := c.Rank(), c.Size()
	buf := []float32{float32(r), 1}
	req, err := c.IAllReduceF32(buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Wait(); err != nil {
		t.Fatal(err)
	}
	if buf[1] != float32(n) || buf[0] != float32(n*(n-1)/2) {
		t.Errorf("rank %d: allreduce %v", r, buf)
	}
	f := []float64{float64(r)}
	if err := c.AllReduceF64(f, Max); err != nil || f[0] != float64(n-1) {
		t.Errorf("rank %d: max %v %v", r, f, err)
	}
	i := []int64{int64(r) + 3}
	if err := c.AllReduceI64(i, Min); err != nil || i[0] != 3 {
		t.Errorf("rank %d: min %v %v", r, i, err)
	}
	b, err := c.BcastBytes([]byte(fmt.Sprintf("root%d", r)), n-1)
	if err != nil || string(b) != fmt.Sprintf("root%d", n-1) {
		t.Errorf("rank %d: bcast bytes %q %v", r, b, err)
	}
	all, err := c.AllGatherBytes([]byte(fmt.Sprint(r)))
	if err != nil || len(all) != n || string(all[n-1]) != fmt.Sprint(n-1) {
		t.Errorf("rank %d: allgather %q %v", r, all, err)
	}
	g, err := c.GatherBytes([]byte(fmt.Sprint(r)), 0)
	if err != nil || (r == 0) != (len(g) == n) {
		t.Errorf("rank %d: gather %q %v", r, g, err)
	}
	send := make([][]byte, n)
	for d := range send {
		send[d] = []byte(fmt.Sprintf("%d>%d", r, d))
	}
	got, err := c.AllToAllBytes(send)
	if err != nil || string(got[0]) != fmt.Sprintf("0>%d", r) {
		t.Errorf("rank %d: alltoall %q %v", r, got, err)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("KESTREL_COMM_HANG_TEST") == "1" {
		// Rank n−1 never reaches the allreduce; the others must name it.
		SetTimeout(c, 2*time.Second)
		if r == n-1 {
			time.Sleep(4 * time.Second)
		} else {
			err := c.AllReduceF32([]float32{1})
			var he *HangError
			if !errors.As(err, &he) || len(he.Missing) != 1 || he.Missing[0] != n-1 {
				t.Fatalf("rank %d: %v, want a HangError naming rank %d", r, err, n-1)
			}
			t.Logf("rank %d: %v", r, err)
			if r == 0 {
				time.Sleep(time.Second) // stay up to answer the others' queries
			}
		}
		return // the group is out of step now; do not finalize through collectives
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMPIAllReduceBandwidth measures the float32 all-reduce under mpirun
// when KESTREL_COMM_BENCH=N (elements, e.g. ref7m's 7.6M parameters):
// median time of 10 and the bus bandwidth 2(N−1)/N × 4·n bytes ÷ time.
func TestMPIAllReduceBandwidth(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KESTREL_COMM_BENCH"))
	if n <= 0 {
		t.Skip("set KESTREL_COMM_BENCH=elements and run under mpirun")
	}
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.Size() < 2 {
		t.Skip("not launched by mpirun with ≥ 2 ranks")
	}
	buf := make([]float32, n)
	for i := range buf {
		buf[i] = 1
	}
	var ds []time.Duration
	for i := 0; i < 12; i++ {
		if err := c.Barrier(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := c.AllReduceF32(buf); err != nil {
			t.Fatal(err)
		}
		if i >= 2 { // warm-up
			ds = append(ds, time.Since(t0))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	med := ds[len(ds)/2]
	N := float64(c.Size())
	bus := 2 * (N - 1) / N * 4 * float64(n) / med.Seconds()
	if c.Rank() == 0 {
		fmt.Printf("allreduce_f32 ranks=%d elements=%d bytes=%d median=%v min=%v bus_bandwidth=%.2f GB/s\n", c.Size(), n, 4*n, med, ds[0], bus/1e9)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
