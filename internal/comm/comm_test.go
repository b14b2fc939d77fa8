package comm

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// runRanks runs f on every rank of a Local group of n and returns the errors.
func runRanks(n int, f func(c Comm) error) []error {
	cs := Local(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(c)
		}()
	}
	wg.Wait()
	return errs
}

func noErr(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

func TestLocalAllReduce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			out := make([][]float32, n)
			f64 := make([][3]float64, n)
			i64 := make([][3]int64, n)
			noErr(t, runRanks(n, func(c Comm) error {
				r := c.Rank()
				buf := []float32{float32(r), 1, float32(r * r)}
				if err := c.AllReduceF32(buf); err != nil {
					return err
				}
				out[r] = buf
				for k, op := range []Op{Sum, Max, Min} {
					b := []float64{float64(r) + 0.5}
					if err := c.AllReduceF64(b, op); err != nil {
						return err
					}
					f64[r][k] = b[0]
					bi := []int64{int64(10 * r)}
					if err := c.AllReduceI64(bi, op); err != nil {
						return err
					}
					i64[r][k] = bi[0]
				}
				return nil
			}))
			var s, s2 float32
			for r := 0; r < n; r++ {
				s += float32(r)
				s2 += float32(r * r)
			}
			for r := 0; r < n; r++ {
				if want := []float32{s, float32(n), s2}; fmt.Sprint(out[r]) != fmt.Sprint(want) {
					t.Errorf("rank %d: f32 sum %v, want %v", r, out[r], want)
				}
				wantF := [3]float64{float64(s) + 0.5*float64(n), float64(n-1) + 0.5, 0.5}
				if f64[r] != wantF {
					t.Errorf("rank %d: f64 sum/max/min %v, want %v", r, f64[r], wantF)
				}
				wantI := [3]int64{10 * int64(s), 10 * int64(n-1), 0}
				if i64[r] != wantI {
					t.Errorf("rank %d: i64 sum/max/min %v, want %v", r, i64[r], wantI)
				}
			}
		})
	}
}

// TestLocalReductionOrder: the sum is ((x0+x1)+x2) on every rank, so all
// ranks agree bit for bit even where float32 addition is not associative.
func TestLocalReductionOrder(t *testing.T) {
	vals := []float32{1e8, 1, -1e8}
	out := make([]float32, 3)
	noErr(t, runRanks(3, func(c Comm) error {
		b := []float32{vals[c.Rank()]}
		err := c.AllReduceF32(b)
		out[c.Rank()] = b[0]
		return err
	}))
	want := (vals[0] + vals[1]) + vals[2]
	for r, v := range out {
		if v != want {
			t.Errorf("rank %d: %v, want %v (rank order)", r, v, want)
		}
	}
}

func TestLocalNonBlockingOrder(t *testing.T) {
	const n = 3
	got := make([][2]float32, n)
	noErr(t, runRanks(n, func(c Comm) error {
		a := []float32{1}
		b := []float32{float32(c.Rank())}
		ra, err := c.IAllReduceF32(a)
		if err != nil {
			return err
		}
		rb, err := c.IAllReduceF32(b)
		if err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := rb.Wait(); err != nil {
			return err
		}
		if err := ra.Wait(); err != nil {
			return err
		}
		got[c.Rank()] = [2]float32{a[0], b[0]}
		return nil
	}))
	for r, g := range got {
		if g != [2]float32{3, 3} {
			t.Errorf("rank %d: %v, want [3 3]", r, g)
		}
	}
}

func TestLocalBytes(t *testing.T) {
	const n = 3
	type res struct {
		bc, bcb string
		gat     [][]byte
		all     [][]byte
		a2a     [][]byte
	}
	out := make([]res, n)
	noErr(t, runRanks(n, func(c Comm) error {
		r := c.Rank()
		var o res
		fixed := []byte{byte(r), byte(r)}
		if err := c.Bcast(fixed, 1); err != nil {
			return err
		}
		o.bc = string(fixed)
		b, err := c.BcastBytes([]byte(strings.Repeat("x", r+1)), 2)
		if err != nil {
			return err
		}
		o.bcb = string(b)
		if o.gat, err = c.GatherBytes([]byte{byte('a' + r)}, 0); err != nil {
			return err
		}
		if o.all, err = c.AllGatherBytes([]byte{byte('a' + r)}); err != nil {
			return err
		}
		send := make([][]byte, n)
		for d := range send {
			send[d] = []byte(fmt.Sprintf("%d>%d", r, d))
		}
		if o.a2a, err = c.AllToAllBytes(send); err != nil {
			return err
		}
		out[r] = o
		return nil
	}))
	for r, o := range out {
		if o.bc != "\x01\x01" || o.bcb != "xxx" {
			t.Errorf("rank %d: bcast %q, bcast bytes %q", r, o.bc, o.bcb)
		}
		if (r == 0) != (o.gat != nil) || (r == 0 && fmt.Sprintf("%s", o.gat) != "[a b c]") {
			t.Errorf("rank %d: gather %s", r, o.gat)
		}
		if fmt.Sprintf("%s", o.all) != "[a b c]" {
			t.Errorf("rank %d: allgather %s", r, o.all)
		}
		want := fmt.Sprintf("[0>%d 1>%d 2>%d]", r, r, r)
		if fmt.Sprintf("%s", o.a2a) != want {
			t.Errorf("rank %d: alltoall %s, want %s", r, o.a2a, want)
		}
	}
}

func TestLocalErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func(c Comm) error
		want string
	}{
		{"bad root", func(c Comm) error { return c.Bcast(nil, 7) }, "root 7"},
		{"bad op", func(c Comm) error { return c.AllReduceF64([]float64{1}, Op(9)) }, "unknown reduction"},
		{"alltoall count", func(c Comm) error { _, err := c.AllToAllBytes(nil); return err }, "0 send buffers"},
		{"length mismatch", func(c Comm) error { return c.AllReduceF32(make([]float32, c.Rank()+1)) }, "elements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := runRanks(2, tt.f)
			for r, err := range errs {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("rank %d: error %v, want one containing %q", r, err, tt.want)
				}
			}
		})
	}
}

// TestLocalHang: a rank that never reaches the collective is named by the
// others' HangError.
func TestLocalHang(t *testing.T) {
	errs := runRanks(3, func(c Comm) error {
		SetTimeout(c, 50*time.Millisecond)
		if c.Rank() == 2 {
			return nil // never calls the allreduce
		}
		return c.AllReduceF32([]float32{1})
	})
	for r := 0; r < 2; r++ {
		var he *HangError
		if !errors.As(errs[r], &he) {
			t.Fatalf("rank %d: %v, want a HangError", r, errs[r])
		}
		if len(he.Missing) != 1 || he.Missing[0] != 2 || !strings.Contains(he.Error(), "rank 2 on local2") {
			t.Errorf("rank %d: %v", r, he)
		}
	}
}

func TestLocalAbort(t *testing.T) {
	errs := runRanks(2, func(c Comm) error {
		if c.Rank() == 1 {
			c.Abort(3)
			return nil
		}
		return c.Barrier()
	})
	if !errors.Is(errs[0], ErrAborted) {
		t.Errorf("rank 0: %v, want ErrAborted", errs[0])
	}
}

func TestSingle(t *testing.T) {
	c := Single()
	buf := []float32{1, 2}
	if err := c.AllReduceF32(buf); err != nil || buf[1] != 2 {
		t.Fatalf("allreduce: %v %v", buf, err)
	}
	f := []float64{math.Pi}
	if err := c.AllReduceF64(f, Max); err != nil || f[0] != math.Pi {
		t.Fatalf("allreduce f64: %v %v", f, err)
	}
	g, err := c.AllGatherBytes([]byte("a"))
	if err != nil || len(g) != 1 || string(g[0]) != "a" {
		t.Fatalf("allgather: %q %v", g, err)
	}
	if err := c.Bcast(nil, 1); err == nil {
		t.Fatal("bcast from root 1 of 1 rank: no error")
	}
	if c.Rank() != 0 || c.Size() != 1 || c.Host() == "" {
		t.Fatalf("rank %d size %d host %q", c.Rank(), c.Size(), c.Host())
	}
}

func TestFromEnv(t *testing.T) {
	if MPIBuilt() {
		t.Skip("MPI build: FromEnv initializes MPI")
	}
	tests := []struct {
		env     map[string]string
		wantErr string
	}{
		{map[string]string{}, ""},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "1"}, ""},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "2"}, "OMPI_COMM_WORLD_SIZE=2"},
		{map[string]string{"PMI_SIZE": "4"}, "PMI_SIZE=4"},
		{map[string]string{"SLURM_NTASKS": "8"}, ""}, // an allocation, not a launch (launch_test.go)
		{map[string]string{"SLURM_NTASKS": "8", "SLURM_STEP_NUM_TASKS": "8"}, "built without MPI"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.env), func(t *testing.T) {
			setLaunchEnv(t, tt.env)
			c, err := FromEnv()
			if tt.wantErr == "" {
				if err != nil || c.Size() != 1 {
					t.Fatalf("FromEnv: %v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrNoMPI) {
				t.Fatalf("FromEnv: error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
