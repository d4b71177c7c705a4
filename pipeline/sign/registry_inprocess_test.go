//go:build !integration

package sign

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// startRegistry serves go-containerregistry's in-process registry on loopback for the test's
// lifetime and returns its host: go test ./... signs with no registry process; the
// integration tier signs against the real one (registry_real_test.go).
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
