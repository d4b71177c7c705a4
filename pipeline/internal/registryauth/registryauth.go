// Package registryauth is the one place nginx-forge decides where registry credentials come
// from. Every registry access (the runtime base pull, the glibc check, publishing, the
// smoke tests' pull, the base-image update check) resolves its credentials through
// Keychain, so `ci smoke --image ghcr.io/...` authenticates exactly as `ci build --push`
// did. Packages that take a caller's keychain use the Source type from here, which is
// what lets the import rules say that only this package imports go-containerregistry's
// authn (and so only this package can reach for authn.DefaultKeychain on its own).
//
// Nothing here logs: credentials are resolved per registry and go into request headers only.
package registryauth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
)

// Source is a source of registry credentials: go-containerregistry's authn.Keychain (an
// alias, so any keychain is one).
type Source = authn.Keychain

// Keychain is the credentials source every registry access uses unless told otherwise: the
// standard Docker config ($DOCKER_CONFIG/config.json or ~/.docker/config.json, with its
// credential helpers, as `docker login` writes it), then GITHUB_TOKEN for ghcr.io. The
// environment is read at each lookup, not when Keychain is called.
func Keychain() Source {
	return authn.NewMultiKeychain(dockerConfigCheck{os.Getenv, os.UserHomeDir}, authn.DefaultKeychain, gitHubKeychain(os.Getenv))
}

// dockerConfigCheck answers no registry itself: it refuses every lookup while the Docker
// config ($DOCKER_CONFIG/config.json, else ~/.docker/config.json) exists but is not a
// regular file. go-containerregistry's keychain skips a config.json that is a directory
// and goes on anonymously, so a login would be ignored without a word, and a push fail
// with a registry's "unauthorized" that points nowhere near the cause.
type dockerConfigCheck struct {
	getenv func(string) string
	home   func() (string, error)
}

func (k dockerConfigCheck) Resolve(authn.Resource) (authn.Authenticator, error) {
	dir := k.getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := k.home()
		if err != nil {
			return authn.Anonymous, nil // no home: no Docker config to look at
		}
		dir = filepath.Join(home, ".docker")
	}
	file := filepath.Join(dir, "config.json")
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return authn.Anonymous, nil
	case err != nil:
		return nil, fmt.Errorf("registry credentials: reading the Docker config %s: %w", file, err)
	case !fi.Mode().IsRegular():
		kind := "a directory"
		if !fi.IsDir() {
			kind = "not a regular file (" + fi.Mode().Type().String() + ")"
		}
		return nil, fmt.Errorf("registry credentials: the Docker config %s is %s, not a file: remove it, or point DOCKER_CONFIG at the directory that holds your config.json (docker login writes it)", file, kind)
	}
	return authn.Anonymous, nil
}

// gitHubKeychain answers for ghcr.io with GITHUB_TOKEN (user GITHUB_ACTOR, which ghcr.io
// does not check) and is anonymous for every other registry or when the token is unset: on
// GitHub Actions the workflow's token is enough to push, without a docker login step.
func gitHubKeychain(getenv func(string) string) Source {
	return githubKeychain{getenv}
}

type githubKeychain struct{ getenv func(string) string }

func (k githubKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() != "ghcr.io" {
		return authn.Anonymous, nil
	}
	tok := k.getenv("GITHUB_TOKEN")
	if tok == "" {
		return authn.Anonymous, nil
	}
	user := k.getenv("GITHUB_ACTOR")
	if user == "" {
		user = "nginx-forge"
	}
	return authn.FromConfig(authn.AuthConfig{Username: user, Password: tok}), nil
}
