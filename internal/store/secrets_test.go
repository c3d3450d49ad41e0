package store

import (
	"context"
	"errors"
	"testing"
)

// testSecrets: owner-scoped get/update/delete, pages by name, and a
// team's secrets removed with the team.
func testSecrets(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.fresh(t)
	if err := s.PutTeam(ctx, &Team{ID: "t1", Name: "one"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b", "a", "c"} {
		if err := s.InsertSecret(ctx, &Secret{ID: "sec_" + n, Owner: "t1", Name: n}, []byte("sealed")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.InsertSecret(ctx, &Secret{ID: "sec_x", Owner: "t1", Name: "a"}, nil); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate name = %v", err)
	}
	_ = s.InsertSecret(ctx, &Secret{ID: "sec_o", Owner: "t2", Name: "a"}, []byte("other"))
	if _, _, err := s.GetSecret(ctx, "t2", "sec_a", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("other owner's id = %v", err)
	}
	if err := s.UpdateSecret(ctx, &Secret{ID: "sec_a", Owner: "t2", Name: "a"}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("update as other owner = %v", err)
	}
	if err := s.DeleteSecret(ctx, "t2", "sec_a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete as other owner = %v", err)
	}
	page, _ := s.Secrets(ctx, "t1", "a", 10)
	if len(page) != 2 || page[0].Name != "b" || page[1].Name != "c" {
		t.Errorf("page after a = %v", page)
	}
	if err := s.DeleteTeam(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if left, _ := s.Secrets(ctx, "t1", "", 10); len(left) != 0 {
		t.Errorf("the team's secrets outlived it: %v", left)
	}
	if _, sealed, err := s.GetSecret(ctx, "t2", "a", true); err != nil || string(sealed) != "other" {
		t.Errorf("another team's secret: %v", err)
	}
}
