package prepare

import (
	"context"
	"sync"
)

// orderedMap runs fn on every item of in with n workers and emits the items
// in their original sequence order (item.seq must count 0, 1, 2 …). The
// reorder buffer holds at most about n + cap(in) items.
func orderedMap(ctx context.Context, in <-chan *item, n int, fn func(*item)) <-chan *item {
	done := make(chan *item, n)
	out := make(chan *item, n)
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range in {
				if ctx.Err() == nil {
					fn(it)
				}
				done <- it
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	go func() {
		defer close(out)
		pending := map[int64]*item{}
		next := int64(0)
		for it := range done {
			pending[it.seq] = it
			for {
				x, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				next++
				out <- x
			}
		}
	}()
	return out
}
