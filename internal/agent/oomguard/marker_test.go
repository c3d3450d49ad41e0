package oomguard

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMarker: the guard's marker page is mapped at MarkerAddr (visible in
// /proc/self/maps, as the host sees it in the agent's stub) and writable;
// a second one cannot take the address.
func TestMarker(t *testing.T) {
	m := marker()
	if m == nil {
		t.Fatal("marker not mapped")
	}
	touch(m)
	touch(nil)
	maps, _ := os.ReadFile("/proc/self/maps")
	if !strings.Contains(string(maps), fmt.Sprintf("%x-", MarkerAddr)) {
		t.Fatalf("no mapping at %#x:\n%s", MarkerAddr, maps)
	}
	if marker() != nil {
		t.Fatal("a second marker took the same address")
	}
}
