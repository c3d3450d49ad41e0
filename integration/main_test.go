package integration

import (
	"testing"

	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestMain stops the throwaway PostgreSQL the cluster tests start, if any.
func TestMain(m *testing.M) { pgtest.Main(m) }
