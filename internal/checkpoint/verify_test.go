package checkpoint

import (
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/model"
)

// testPayload is a small checkpoint of step: two tensors, moments that
// differ from the weights, healthy health.
func testPayload(step int) *Payload {
	ts := []model.Tensor{{Name: "a.weight", Shape: []int{3, 4}, Offset: 0, Size: 12, Kind: "matrix"}, {Name: "b.weight", Shape: []int{5}, Offset: 12, Size: 5, Kind: "norm"}}
	n := 17
	p := &Payload{Tensors: ts, Params: make([]float32, n), M: make([]float32, n), V: make([]float32, n)}
	for i := range n {
		p.Params[i], p.M[i], p.V[i] = float32(i)*0.5, float32(i)*-0.01, float32(i)*1e-4
	}
	p.State = State{Format: FormatVersion, Step: step, Kind: "rolling", TokensSeen: int64(step) * 64, Health: &Health{Status: HealthHealthy}}
	p.State.Data.NextFillStep = step
	return p
}

// flipMiddle flips the middle byte of dir/name, as a bit flip on the
// way to the disk would.
func flipMiddle(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyWritten(t *testing.T) {
	cases := []struct {
		name    string
		restore bool
		after   func(t *testing.T, dir string, p *Payload) // between Write and VerifyWritten
		want    string                                     // "" = verifies
		finite  bool
	}{
		{"fresh checkpoint, checksums only", false, func(*testing.T, string, *Payload) {}, "", true},
		{"fresh checkpoint with the restore test", true, func(*testing.T, string, *Payload) {}, "", true},
		{"byte flipped in the optimizer file", false, func(t *testing.T, dir string, _ *Payload) { flipMiddle(t, dir, OptimizerFile) }, OptimizerFile + ": SHA-256", true},
		{"byte flipped in the weights", true, func(t *testing.T, dir string, _ *Payload) { flipMiddle(t, dir, ModelFile) }, ModelFile + ": SHA-256", true},
		{"file removed", false, func(t *testing.T, dir string, _ *Payload) { os.Remove(filepath.Join(dir, EMAFile)) }, EMAFile, true},
		{"moment differs from memory (a writer that encoded the wrong state)", true, func(_ *testing.T, _ string, p *Payload) { p.V[14] = 7 }, "b.weight.exp_avg_sq[2] reads back as", true},
		{"moment differs but no restore test", false, func(_ *testing.T, _ string, p *Payload) { p.V[14] = 7 }, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPayload(10)
			dir, _, err := Write(t.TempDir(), p)
			if err != nil {
				t.Fatal(err)
			}
			tc.after(t, dir, p)
			rep, err := VerifyWritten(dir, p, tc.restore)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("VerifyWritten: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("VerifyWritten = %v, want an error containing %q", err, tc.want)
			}
			if tc.want == "" && rep.Restored != tc.restore {
				t.Errorf("Restored = %v, want %v", rep.Restored, tc.restore)
			}
		})
	}
}

// TestVerifyWrittenNonFiniteMoment: the restore test reports a NaN or an
// infinity in the moments (the file matches memory: it is the state that
// is bad).
func TestVerifyWrittenNonFiniteMoment(t *testing.T) {
	p := testPayload(10)
	p.V[3] = float32(math.Inf(1))
	dir, _, err := Write(t.TempDir(), p)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyWritten(dir, p, true)
	if err != nil || !rep.Restored || rep.OptStateFinite {
		t.Fatalf("VerifyWritten = %+v, %v; want restored, not finite, no error", rep, err)
	}
}

// TestMarkFailedNeverLastGood: a checkpoint marked failed after its
// verification is rejected, never last-good (even when it was healthy and
// an older one was confirmed), and skipped by Latest, Resolve and
// NewestValidAtOrBefore.
func TestMarkFailedNeverLastGood(t *testing.T) {
	run := t.TempDir()
	root := filepath.Join(run, "checkpoints")
	old, _, err := Write(root, testPayload(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteConfirmation(old, &Confirmation{Status: Confirmed, Through: 20, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	p := testPayload(20)
	bad, _, err := Write(root, p)
	if err != nil {
		t.Fatal(err)
	}
	p.M[0] = 42 // the restore test fails while the checksums still match
	_, verr := VerifyWritten(bad, p, true)
	if verr == nil {
		t.Fatal("the restore test passed a moment that differs from memory")
	}
	if err := MarkFailed(bad, 20, verr.Error()); err != nil {
		t.Fatal(err)
	}
	list, err := List(run)
	if err != nil {
		t.Fatal(err)
	}
	if list[0].Step != 20 || list[0].Status != Rejected || list[0].LastGood || !list[1].LastGood {
		t.Fatalf("list: %+v", list)
	}
	if lg, err := LastGood(run); err != nil || lg.Dir != old {
		t.Fatalf("LastGood = %+v, %v; want %s", lg, err, old)
	}
	for _, name := range []string{"last", "last-good"} {
		if got, err := Resolve(run, name); err != nil || got != old {
			t.Errorf("Resolve(%s) = %s, %v; want %s", name, got, err, old)
		}
	}
	if got, err := NewestValidAtOrBefore(run, 100); err != nil || got != old {
		t.Errorf("NewestValidAtOrBefore = %s, %v; want %s", got, err, old)
	}
	if got, err := LastGoodBefore(run, 100); err != nil || got != old {
		t.Errorf("LastGoodBefore = %s, %v; want %s", got, err, old)
	}
	l, err := Latest(root, nil)
	if err != nil || l.Dir != old {
		t.Fatalf("Latest resumed from %v (%v), want %s", l, err, old)
	}
	if _, err := Load(bad); !errors.Is(err, ErrVerifyFailed) {
		t.Errorf("Load of the failed checkpoint: %v, want ErrVerifyFailed", err)
	}
	// With the older one gone, nothing is left to resume from.
	os.RemoveAll(old)
	if _, err := Latest(root, nil); !errors.Is(err, ErrVerifyFailed) {
		t.Fatalf("Latest with only the failed checkpoint: %v, want ErrVerifyFailed", err)
	}
}

// ref7mPayload is a checkpoint the size of the ref7m preset's (7.6M
// parameters: 4 × 30 MiB of weights, moments and EMA weights).
func ref7mPayload() *Payload {
	const n = 7_600_000
	p := testPayload(10)
	p.Tensors = []model.Tensor{{Name: "w", Shape: []int{n}, Offset: 0, Size: n, Kind: "matrix"}}
	p.Params, p.M, p.V = make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		p.Params[i], p.M[i], p.V[i] = float32(i%977)*1e-3, float32(i%311)*-1e-5, float32(i%101)*1e-8
	}
	return p
}

// BenchmarkVerifyRef7m measures the verification after the write of a
// ref7m-sized checkpoint: sums = the SHA-256 re-read of every file,
// restore = the restore test of the Adam moments, beside write = Write.
func BenchmarkVerifyRef7m(b *testing.B) {
	p := ref7mPayload()
	root := b.TempDir()
	var write, sums, restore float64
	for b.Loop() {
		t0 := time.Now()
		dir, _, err := Write(root, p)
		if err != nil {
			b.Fatal(err)
		}
		write += time.Since(t0).Seconds()
		rep, err := VerifyWritten(dir, p, true)
		if err != nil {
			b.Fatal(err)
		}
		sums += rep.SumsSeconds
		restore += rep.RestoreSeconds
	}
	n := float64(b.N)
	b.ReportMetric(1e3*write/n, "write-ms")
	b.ReportMetric(1e3*sums/n, "sums-ms")
	b.ReportMetric(1e3*restore/n, "restore-ms")
}

// TestKeepPolicyFailedCheckpoint: a checkpoint that failed its
// verification is not one of the checkpoint.keep rolling ones (with keep =
// 1, the good one before it stays: the run can still resume), and it is
// deleted once keep good ones are newer.
func TestKeepPolicyFailedCheckpoint(t *testing.T) {
	root := filepath.Join(t.TempDir(), "checkpoints")
	write := func(step int, fail bool) string {
		p := testPayload(step)
		p.State.Health = &Health{Status: HealthUnknown} // monitor off: nothing is ever confirmed
		dir, _, err := Write(root, p)
		if err != nil {
			t.Fatal(err)
		}
		if fail {
			if err := MarkFailed(dir, step, "test"); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c100 := write(100, false)
	c200 := write(200, true)
	if del := ApplyKeepPolicy(root, 1, log); len(del) != 0 {
		t.Fatalf("deleted %v after the failed checkpoint, want none", del)
	}
	if l, err := Latest(root, nil); err != nil || l.Dir != c100 {
		t.Fatalf("resume after the failed checkpoint: %v, %v; want %s", l, err, c100)
	}
	c300 := write(300, false)
	del := ApplyKeepPolicy(root, 1, log)
	if strings.Join(del, ",") != Name(200)+","+Name(100) {
		t.Fatalf("deleted %v, want the failed %s and the older %s", del, c200, c100)
	}
	if l, err := Latest(root, nil); err != nil || l.Dir != c300 {
		t.Fatalf("resume: %v, %v; want %s", l, err, c300)
	}
}
