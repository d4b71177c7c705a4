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
	"os"

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
	return authn.NewMultiKeychain(authn.DefaultKeychain, gitHubKeychain(os.Getenv))
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
