package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
)

// originSource is where readOrigin looks, so tests can give an environment and a remote:
// getenv is os.Getenv, and gitRemote the checkout's origin remote ("" when none).
type originSource struct {
	getenv    func(string) string
	gitRemote func() string
}

// realOrigin reads the process's environment and the working directory's checkout.
var realOrigin = originSource{getenv: os.Getenv, gitRemote: gitOriginURL}

// readOrigin is where this build runs from, read once, here: the repository the image's
// source label and the provenance name, the provenance's builder and the ref built.
//   - The repository: --source-repository (flagRepo); else, in GitHub Actions,
//     GITHUB_SERVER_URL/GITHUB_REPOSITORY; else the checkout's origin remote, as an https
//     URL without its user name or password (a remote that is not a repository URL, a
//     local path, is no repository); else none, and the image has no source label.
//   - The builder: in Actions the workflow that runs (GITHUB_SERVER_URL/GITHUB_WORKFLOW_REF,
//     as GitHub's own provenance names it); else REPOSITORY/ci; else none.
//   - The ref: --ref (flagRef); else, in Actions, GITHUB_REF.
func readOrigin(flagRepo, flagRef string, src originSource) (forge.Origin, error) {
	var o forge.Origin
	inActions := src.getenv("GITHUB_ACTIONS") == "true"
	server := strings.TrimRight(src.getenv("GITHUB_SERVER_URL"), "/")
	switch repo := src.getenv("GITHUB_REPOSITORY"); {
	case flagRepo != "":
		if u, err := url.Parse(flagRepo); err == nil && u.User != nil {
			return o, usageErrorf("--source-repository: the URL carries credentials (user@ or user:password@); give it without them, it is written into the image")
		}
		r, err := repositoryURL(flagRepo)
		if err != nil {
			return o, usageErrorf("--source-repository: %v", err)
		}
		o.Repository = r
	case inActions && server != "" && repo != "":
		// The runner's own variables: GitHub's always name a repository; a runner that
		// stands in for it (act, with a checkout whose remote is a local path) may not, and
		// then nothing is named, as outside a checkout, rather than stopping a build that
		// no flag of the user's made wrong.
		o.Repository, _ = repositoryURL(server + "/" + repo)
	case !inActions:
		// A remote that names no repository (a path, a credential-only form) names none here.
		o.Repository, _ = repositoryURL(src.gitRemote())
	}
	if wf := src.getenv("GITHUB_WORKFLOW_REF"); inActions && server != "" && wf != "" && o.Repository != "" && image.CheckRef(server+"/"+wf) == nil {
		o.BuilderID = server + "/" + wf
	} else if o.Repository != "" {
		o.BuilderID = o.Repository + "/ci"
	}
	o.Ref = flagRef
	if o.Ref == "" && inActions {
		o.Ref = src.getenv("GITHUB_REF")
	}
	return o, nil
}

// scpLikeRE is git's scp-like remote syntax: [user@]host:path (no "://").
var scpLikeRE = regexp.MustCompile(`^(?:[^@/:]+@)?([A-Za-z0-9.-]+):([^/].*)$`)

// hostRE is a host name as a repository URL may hold it.
var hostRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// repositoryURL is a git remote or a repository URL as an https URL
// (https://HOST[:PORT]/PATH, without .git, a user name, a password, a query or a fragment):
// https and http URLs keep their host and port, ssh://, git:// and scp-like remotes
// (git@github.com:acme/edge-nginx.git) their host. A local path, a file:// URL or anything
// else that names no repository on a host is refused. Errors never repeat s, which may
// carry a credential.
func repositoryURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	var host, path string
	if m := scpLikeRE.FindStringSubmatch(s); m != nil && !strings.Contains(s, "://") {
		host, path = m[1], m[2]
	} else {
		u, err := url.Parse(s)
		if err != nil {
			return "", errNotRepository
		}
		switch u.Scheme {
		case "https", "http":
			host = u.Host
		case "ssh", "git", "git+ssh", "ssh+git":
			host = u.Hostname()
		default:
			return "", errNotRepository
		}
		if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return "", errNotRepository
		}
		path = u.Path
	}
	h, port, _ := strings.Cut(host, ":")
	if !hostRE.MatchString(h) || strings.Contains(h, "..") || (port != "" && strings.Trim(port, "0123456789") != "") {
		return "", errNotRepository
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", errNotRepository
		}
	}
	r := "https://" + host + "/" + path
	if err := image.CheckSource(r); err != nil {
		return "", err
	}
	return r, nil
}

// errNotRepository: what was given is not a repository URL.
var errNotRepository = usageErrorf("not a repository URL: give https://HOST/OWNER/REPO (e.g. https://github.com/acme/edge-nginx)")

// gitOriginURL is the origin remote of the checkout this command runs in, "" when there is
// none (no git, no checkout, no such remote). Only the configuration is read: nothing is
// contacted.
func gitOriginURL() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "config", "--get", "remote.origin.url")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
