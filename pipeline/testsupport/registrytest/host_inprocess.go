//go:build !integration

package registrytest

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Host serves a registry on loopback for the test's lifetime and returns its host
// ("127.0.0.1:PORT"). In the fast tier (go test ./...) it is go-containerregistry's
// in-process registry, so tests that only push, tag and read need no registry process; under
// the integration tag (host_real.go) the same tests run against the real one (Start).
func Host(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
