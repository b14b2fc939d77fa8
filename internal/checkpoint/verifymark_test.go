package checkpoint

import (
	"math"
	"strings"
	"testing"
)

// TestVerifyOrMark: a checkpoint that verifies stays loadable; one with a
// flipped byte, or whose moments in memory are not finite (restore test),
// fails with why and is marked failed, so Load refuses it.
func TestVerifyOrMark(t *testing.T) {
	for _, tc := range []struct {
		name    string
		after   func(t *testing.T, dir string, p *Payload) // nil: a NaN moment in memory, written
		restore bool
		want    string // "" = verifies
	}{
		{"verifies", func(*testing.T, string, *Payload) {}, true, ""},
		{"byte flipped", func(t *testing.T, dir string, _ *Payload) { flipMiddle(t, dir, OptimizerFile) }, false, OptimizerFile + ": SHA-256"},
		{"moment not finite", nil, true, "opt_state_finite = 0"}, // written as it was in memory
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPayload(10)
			if tc.after == nil {
				p.V[3] = float32(math.NaN())
			}
			dir, _, err := Write(t.TempDir(), p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.after != nil {
				tc.after(t, dir, p)
			}
			_, verr, merr := VerifyOrMark(dir, p, tc.restore)
			if merr != nil {
				t.Fatalf("marking: %v", merr)
			}
			_, lerr := Load(dir)
			switch {
			case tc.want == "" && (verr != nil || lerr != nil):
				t.Fatalf("VerifyOrMark: %v; Load: %v; want both fine", verr, lerr)
			case tc.want != "" && (verr == nil || !strings.Contains(verr.Error(), tc.want)):
				t.Fatalf("VerifyOrMark: %v, want an error containing %q", verr, tc.want)
			case tc.want != "" && lerr == nil:
				t.Fatal("Load read a checkpoint marked failed")
			}
		})
	}
}
