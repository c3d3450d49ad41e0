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
