package fake

import "github.com/sbx-dev/sbx/internal/runtime"

// Spec returns the spec a sandbox was created with.
func (r *Runtime) Spec(id string) (runtime.Spec, bool) {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	rec, ok := r.st.sandboxes[id]
	if !ok {
		return runtime.Spec{}, false
	}
	return rec.spec, true
}

// Signals returns the signals a sandbox received, in order.
func (r *Runtime) Signals(id string) []int {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if rec, ok := r.st.sandboxes[id]; ok {
		return append([]int(nil), rec.signals...)
	}
	return nil
}

// Exit simulates the init of id dying on its own (crash, OOM kill): the
// sandbox is stopped but still known until Delete. It reports whether id exists.
func (r *Runtime) Exit(id string) bool {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	rec, ok := r.st.sandboxes[id]
	if ok {
		rec.state = runtime.StateStopped
	}
	return ok
}

// Running returns the ids of sandboxes that are not stopped: what a test
// asserts is empty when nothing may leak.
func (r *Runtime) Running() []string {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	var ids []string
	for id, rec := range r.st.sandboxes {
		if rec.state != runtime.StateStopped {
			ids = append(ids, id)
		}
	}
	return ids
}
