//go:build integration

package registrytest

import "testing"

// Host runs the real registry (Debian's docker-registry, Start) for the test's lifetime and
// returns its host: the integration tier's side of host_inprocess.go.
func Host(t testing.TB) string {
	t.Helper()
	return Start(t).Host
}
