package comm

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAgreeToStart: with every rank ready every rank goes on; when some
// refuse, every rank returns at once — the refusing ones their own error,
// the others a StartError naming the lowest refusing rank, its host and
// its message.
func TestAgreeToStart(t *testing.T) {
	for _, c := range []struct {
		name   string
		refuse map[int]string
		first  int // lowest refusing rank, -1: none
	}{
		{"all ready", nil, -1},
		{"rank 0 refuses", map[int]string{0: "lock held"}, 0},
		{"rank 2 refuses", map[int]string{2: "no data"}, 2},
		{"two refuse", map[int]string{1: "first", 3: "second"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := Local(4)
			SetTimeout(cs[0], 10*time.Second)
			errs := make([]error, len(cs))
			mine := make([]error, len(cs))
			var wg sync.WaitGroup
			for r, cm := range cs {
				if msg, ok := c.refuse[r]; ok {
					mine[r] = errors.New(msg)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = AgreeToStart(cm, mine[r])
				}()
			}
			wg.Wait()
			for r, err := range errs {
				var se *StartError
				switch {
				case c.first < 0 && err != nil:
					t.Errorf("rank %d: %v, want nil", r, err)
				case mine[r] != nil && err != mine[r]:
					t.Errorf("rank %d: %v, want its own error", r, err)
				case c.first >= 0 && mine[r] == nil && (!errors.As(err, &se) || se.Rank != c.first || se.Host != cs[c.first].Host() || se.Msg != c.refuse[c.first]):
					t.Errorf("rank %d: %v, want rank %d's refusal", r, err, c.first)
				case se != nil && !strings.Contains(err.Error(), "rank "+string(rune('0'+c.first))+" on "+cs[c.first].Host()+" refused to start: "+c.refuse[c.first]):
					t.Errorf("rank %d: message %q", r, err)
				}
			}
		})
	}
}
