//go:build integration

package forge_test

import (
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
)

// startRegistry runs the real registry (Debian's docker-registry) for the test's lifetime
// and returns its host: the integration tier checks the build's order against it.
func startRegistry(t *testing.T) string {
	t.Helper()
	return registrytest.Start(t).Host
}
