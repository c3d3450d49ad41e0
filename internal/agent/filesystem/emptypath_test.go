package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// An empty path is the home (or /init's default workdir) for the calls that
// look at a directory, as in envd; the destructive calls still refuse it.
func TestEmptyPathIsTheDefaultDirectory(t *testing.T) {
	e := newEnv(t)
	must(t, os.WriteFile(filepath.Join(e.home, "a.txt"), []byte("x"), 0o644))
	ctx := context.Background()
	list := func() []string {
		t.Helper()
		res, err := e.client.ListDir(ctx, as("", &fspb.ListDirRequest{Path: ""}))
		must(t, err)
		var names []string
		for _, en := range res.Msg.Entries {
			names = append(names, en.Path)
		}
		return names
	}
	if got := list(); len(got) != 1 || got[0] != filepath.Join(e.home, "a.txt") {
		t.Fatalf("list \"\" = %v, want the home's a.txt", got)
	}
	_, err := e.client.MakeDir(ctx, as("", &fspb.MakeDirRequest{Path: ""}))
	if errCode(err) != connect.CodeAlreadyExists {
		t.Fatalf("makeDir \"\": %v, want already_exists (the SDK's false)", err)
	}
	st := watch(t, e, &fspb.WatchDirRequest{Path: "", IncludeEntry: true}, nil)
	must(t, os.WriteFile(filepath.Join(e.home, "b.txt"), []byte("x"), 0o644))
	collect(t, st, "EVENT_TYPE_CREATE b.txt")
	_, err = e.client.Remove(ctx, as("", &fspb.RemoveRequest{Path: ""}))
	if errCode(err) != connect.CodeInvalidArgument {
		t.Fatalf("remove \"\": %v, want invalid_argument", err)
	}
	_, err = e.client.Move(ctx, as("", &fspb.MoveRequest{Source: "", Destination: "x"}))
	if errCode(err) != connect.CodeInvalidArgument {
		t.Fatalf("move \"\": %v, want invalid_argument", err)
	}
	wd := filepath.Join(e.dir, "work")
	must(t, os.Mkdir(wd, 0o755))
	e.state.Apply(identity.Init{DefaultWorkdir: wd})
	res, err := e.client.Stat(ctx, as("", &fspb.StatRequest{Path: ""}))
	must(t, err)
	if res.Msg.Entry.Path != wd {
		t.Fatalf("stat \"\" with a workdir = %s, want %s", res.Msg.Entry.Path, wd)
	}
}
