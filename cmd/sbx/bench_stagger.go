package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// staggered starts f.stagger create → first command → kill cycles, one every
// f.every whatever the earlier ones are doing (open-loop arrivals, as
// requests from many agents reach a node), and measures each cycle's TTI and
// kill. It returns when every cycle has ended.
func staggered(ctx context.Context, c *client.Client, f benchFlags) []*phase {
	name := fmt.Sprintf("x%d every %s", f.stagger, f.every)
	tti, kill := &phase{Name: "TTI staggered " + name}, &phase{Name: "kill staggered " + name}
	t := time.NewTicker(f.every)
	defer t.Stop()
	var wg sync.WaitGroup
	for i := 0; i < f.stagger; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ttiOnce(ctx, c, f, &phase{}, &phase{}, kill, tti) // create and exec are in the TTI
		}()
	}
	wg.Wait()
	return []*phase{tti, kill}
}
