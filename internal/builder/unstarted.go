package builder

import (
	"context"
)

// MaxUnstartedBuilds bounds a template's build requests never started (a
// request the SDK makes just before it uploads files and starts the build;
// a client that stops in between leaves one). Each is a row in the database
// every team shares, listed with the template, and requests were unbounded
// (313 in 20 s for one template). A var for tests.
var MaxUnstartedBuilds = 32

// pruneUnstarted deletes the oldest of template id's never-started builds
// past MaxUnstartedBuilds (starting one of them is then 404, as for any
// unknown build). The caller holds s.names.
func (s *Service) pruneUnstarted(ctx context.Context, id string) error {
	builds, err := s.st.Builds(ctx, id) // oldest first
	if err != nil {
		return err
	}
	var unstarted []string
	for _, b := range builds {
		if b.Status == "waiting" && len(b.Spec) == 0 {
			unstarted = append(unstarted, b.ID)
		}
	}
	for _, bid := range unstarted[:max(0, len(unstarted)-MaxUnstartedBuilds)] {
		if err := s.st.DeleteBuild(ctx, bid); err != nil {
			return err
		}
	}
	return nil
}
