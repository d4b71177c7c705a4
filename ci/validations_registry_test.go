package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
)

// Issue 35: a DOCKER_CONFIG whose config.json is a directory was skipped without a word (the
// registry then saw an anonymous client). Every registry access of every command now stops
// naming the file and the fix: ci manifest, ci smoke --image, ci build's runtime image pull
// (before any source is fetched).
func TestDockerConfigThatIsADirectoryIsNamed(t *testing.T) {
	notInActions(t)
	host := registrytest.Host(t)
	cfg := t.TempDir()
	file := filepath.Join(cfg, "config.json")
	if err := os.Mkdir(file, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfg)
	srv, requests := countingMirror(t)
	want := "the Docker config " + file + " is a directory, not a file"
	for _, args := range [][]string{
		{"manifest", "--image", host + "/nginx", "--dry-run", "sha256:" + strings.Repeat("a", 64)},
		{"smoke", "--image", host + "/nginx:1", "--timeout", "10s"},
		{"build", "--engine", "host", "--push", "--image", host + "/nginx", "--runtime-image", host + "/base:1", "--mirror", srv.URL, "--cache", t.TempDir()},
	} {
		code, stdout, stderr := runWithin(t, 20*time.Second, args...)
		if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "DOCKER_CONFIG") {
			t.Errorf("%s: exit %d, want a failure naming %q and DOCKER_CONFIG\nstdout: %s\nstderr: %s", args[0], code, want, stdout, stderr)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("build fetched %d sources before the refusal", n)
	}
	// The same commands with a config.json that is a file go on to the registry's own answer.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runWithin(t, 20*time.Second, "manifest", "--image", host+"/nginx", "--dry-run", "sha256:"+strings.Repeat("a", 64))
	if code == 0 || strings.Contains(stderr, "Docker config") {
		t.Errorf("with a config file: exit %d, and the error should be the registry's:\n%s", code, stderr)
	}
}
