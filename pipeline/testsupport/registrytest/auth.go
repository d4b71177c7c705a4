package registrytest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// writeHtpasswd writes the one-user password file of distribution's htpasswd access
// controller, which accepts bcrypt hashes only.
func writeHtpasswd(path, user, password string) error {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return fmt.Errorf("hashing the test registry's password: %w", err)
	}
	return os.WriteFile(path, []byte(user+":"+string(h)+"\n"), 0o600)
}

// DockerConfig writes a Docker client configuration directory (what `docker login HOST`
// leaves: config.json with auths[HOST].auth = base64(user:password)) holding this
// registry's WithBasicAuth credentials, and returns it, for DOCKER_CONFIG. A registry
// without them gets a configuration with no credentials, the "not logged in" case.
func (r *Registry) DockerConfig(t testing.TB) string {
	t.Helper()
	auths := map[string]any{}
	if r.user != "" {
		auths[r.Host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(r.user + ":" + r.password))}
	}
	b, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
