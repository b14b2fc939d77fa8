package comm

import (
	"fmt"
	"testing"
	"time"
)

// TestProgressNamesLaggard: over a Local group, every rank reports its
// collective count to rank 0; any rank can ask which ranks are behind.
func TestProgressNamesLaggard(t *testing.T) {
	const n = 3
	ps := make([]*progress, n)
	noErr(t, runRanks(n, func(c Comm) error {
		p, err := startProgress(c)
		ps[c.Rank()] = p
		return err
	}))
	defer func() {
		for _, p := range ps {
			p.close()
		}
	}()
	ps[0].reached(5)
	ps[1].reached(5)
	ps[2].reached(4)
	tests := []struct {
		asker int
		n     int64
		want  string
	}{
		{0, 5, "[2]"},
		{1, 5, "[2]"},
		{2, 5, "[2]"},
		{0, 4, "[]"},
		{1, 6, "[0 1 2]"},
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, tt := range tests {
		var got string
		for {
			got = fmt.Sprint(ps[tt.asker].behind(tt.n))
			if got == tt.want || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond) // the counts travel asynchronously
		}
		if got != tt.want {
			t.Errorf("rank %d asks who started fewer than %d: %s, want %s", tt.asker, tt.n, got, tt.want)
		}
	}
}
