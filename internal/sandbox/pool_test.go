package sandbox

import (
	"testing"
	"time"
)

func TestRefillBackoff(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, 0}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 30 * time.Second}, {60, 30 * time.Second}} {
		if got := refillBackoff(c.n); got != c.want {
			t.Errorf("refillBackoff(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}
