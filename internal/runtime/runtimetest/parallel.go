package runtimetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// testParallel: concurrent Creates on one runtime instance all succeed and
// each sandbox runs its own init (the backend is safe for concurrent use).
func testParallel(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	const n = 4
	specs := make([]runtime.Spec, n)
	roots := make([]string, n)
	for i := range specs {
		specs[i], roots[i] = fx.spec(t, rt, "echo $$ END > /var/tmp/ready; exec sleep 1000", runtime.Limits{})
	}
	sbs := make([]runtime.Sandbox, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sbs[i], errs[i] = rt.Create(context.Background(), specs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Create #%d: %v", i, err)
			continue
		}
		t.Cleanup(func() {
			if err := sbs[i].Delete(context.Background()); err != nil {
				t.Errorf("Delete: %v", err)
			}
			CheckNoResidue(t, rt, sbs[i], roots[i])
		})
	}
	for i := range sbs {
		if errs[i] == nil {
			waitFile(t, roots[i], "var/tmp/ready", 20*time.Second)
		}
	}
}
