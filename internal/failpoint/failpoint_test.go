package failpoint

import (
	"errors"
	"testing"
)

func TestHit(t *testing.T) {
	Set("a=error,b")
	defer Set("")
	if err := Hit("a"); !errors.Is(err, ErrInjected) {
		t.Fatalf("a: %v", err)
	}
	if err := Hit("b"); !errors.Is(err, ErrInjected) {
		t.Fatalf("b: %v", err)
	}
	if err := Hit("c"); err != nil {
		t.Fatalf("c: %v", err)
	}
}

func TestHitTransient(t *testing.T) {
	Set("t=error2")
	defer Set("")
	for i, want := range []bool{true, true, false, false} {
		if err := Hit("t"); errors.Is(err, ErrInjected) != want {
			t.Fatalf("hit %d: %v, want failure=%v", i+1, err, want)
		}
	}
}
