package registryauth

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func TestGitHubKeychain(t *testing.T) {
	env := map[string]string{"GITHUB_TOKEN": "ghs_secret", "GITHUB_ACTOR": "octocat"}
	kc := gitHubKeychain(func(k string) string { return env[k] })
	ghcr, _ := name.NewRepository("ghcr.io/nginx-forge/nginx")
	a, err := kc.Resolve(ghcr)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := a.Authorization()
	if cfg.Username != "octocat" || cfg.Password != "ghs_secret" {
		t.Errorf("ghcr.io credentials %q/%q", cfg.Username, cfg.Password)
	}
	other, _ := name.NewRepository("docker.io/library/nginx")
	if a, _ := kc.Resolve(other); a != authn.Anonymous {
		t.Error("GITHUB_TOKEN offered to docker.io")
	}
	delete(env, "GITHUB_TOKEN")
	if a, _ := kc.Resolve(ghcr); a != authn.Anonymous {
		t.Error("credentials without a token")
	}
}

// Keychain answers from $DOCKER_CONFIG (read at each lookup) for the registry the login is
// for, from GITHUB_TOKEN for ghcr.io, and is anonymous elsewhere.
func TestKeychain(t *testing.T) {
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("robot:pa55"))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"registry.example:5000":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := Keychain()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("GITHUB_TOKEN", "ghs_token")
	t.Setenv("GITHUB_ACTOR", "octocat")
	for _, c := range []struct{ repo, user, pass string }{
		{"registry.example:5000/nginx-forge", "robot", "pa55"},
		{"ghcr.io/nginx-forge/nginx", "octocat", "ghs_token"},
		{"registry.example:5001/nginx-forge", "", ""},
	} {
		repo, _ := name.NewRepository(c.repo)
		a, err := kc.Resolve(repo)
		if err != nil {
			t.Fatalf("%s: %v", c.repo, err)
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Username != c.user || cfg.Password != c.pass {
			t.Errorf("%s: credentials %q/%q, want %q/%q", c.repo, cfg.Username, cfg.Password, c.user, c.pass)
		}
	}
}
