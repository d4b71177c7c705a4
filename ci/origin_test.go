package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
)

const forkRepo = "https://github.com/acme/edge-nginx"

// noActions clears what GitHub Actions would set, so the process's own environment (this
// project's CI) does not decide what a test reads.
func noActions(t *testing.T) {
	for _, k := range []string{"GITHUB_ACTIONS", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_WORKFLOW_REF", "GITHUB_REF"} {
		t.Setenv(k, "")
	}
}

// buildOrigin runs `ci build ARGS` through run(), the command line as typed, stopping where
// the build would start (forge.Run), and returns the origin the request carries.
func buildOrigin(t *testing.T, args ...string) (forge.Origin, int, string) {
	t.Helper()
	var got *forge.Origin
	errStop := errors.New("stopped before the build")
	forgeRun = func(ctx context.Context, eng engine.Engine, rs *forge.Resolved, opts ...forge.Option) (*forge.Result, error) {
		o := rs.Request().Origin
		got = &o
		eng.Close()
		return nil, errStop
	}
	t.Cleanup(func() { forgeRun = forge.Run })
	dir := t.TempDir()
	args = append([]string{"build", "--engine", "host", "--no-smoke", "--cache", filepath.Join(dir, "cache"), "--output", filepath.Join(dir, "nginx.tar")}, args...)
	var stdout, stderr strings.Builder
	code := run(context.Background(), args, &stdout, &stderr)
	if got == nil {
		if code != 2 {
			t.Fatalf("ci build %q neither reached the build nor refused its flags: exit %d\n%s", args, code, stderr.String())
		}
		return forge.Origin{}, code, stderr.String()
	}
	if !strings.Contains(stderr.String(), errStop.Error()) {
		t.Fatalf("ci build stopped elsewhere: exit %d\n%s", code, stderr.String())
	}
	return *got, code, stderr.String()
}

// --source-repository names a fork's repository: the request carries it as the image's
// source and the provenance's, with the fork's ci as builder (forge's
// TestForkOriginInLabelAndProvenance follows an origin into the label and the provenance).
func TestSourceRepositoryFlag(t *testing.T) {
	noActions(t)
	t.Chdir(t.TempDir()) // no checkout: only the flag names a repository
	o, _, errs := buildOrigin(t, "--source-repository", forkRepo+".git", "--revision", strings.Repeat("ab", 20))
	if want := (forge.Origin{Repository: forkRepo, BuilderID: forkRepo + "/ci"}); o != want {
		t.Errorf("origin %+v, want %+v\n%s", o, want, errs)
	}
	o, code, errs := buildOrigin(t, "--source-repository", "https://x-access-token:ghs_SECRET@github.com/acme/edge-nginx")
	if code != 2 || o != (forge.Origin{}) || strings.Contains(errs, "ghs_SECRET") || !strings.Contains(errs, "--source-repository: the URL carries credentials") {
		t.Errorf("a --source-repository with a token: exit %d, origin %+v\n%s", code, o, errs)
	}
	for _, bad := range []string{"/work/main", "file:///work/main", "https://github.com/", "ftp://github.com/acme/edge-nginx"} {
		if _, code, errs := buildOrigin(t, "--source-repository", bad); code != 2 || !strings.Contains(errs, "not a repository URL") {
			t.Errorf("--source-repository %s: exit %d\n%s", bad, code, errs)
		}
	}
}

// In GitHub Actions the repository is the workflow's, and the builder the workflow itself,
// as GitHub's own provenance names it; the ref is GITHUB_REF. Without the fork's variables
// in the runner's environment nothing here could name acme/edge-nginx.
func TestOriginFromActions(t *testing.T) {
	noActions(t)
	t.Chdir(t.TempDir())
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_SERVER_URL", "https://github.com")
	t.Setenv("GITHUB_REPOSITORY", "acme/edge-nginx")
	t.Setenv("GITHUB_WORKFLOW_REF", "acme/edge-nginx/.github/workflows/build.yml@refs/heads/main")
	t.Setenv("GITHUB_REF", "refs/heads/main")
	o, _, errs := buildOrigin(t)
	want := forge.Origin{Repository: forkRepo, BuilderID: forkRepo + "/.github/workflows/build.yml@refs/heads/main", Ref: "refs/heads/main"}
	if o != want {
		t.Errorf("origin %+v, want %+v\n%s", o, want, errs)
	}
	// The same as forge's test follows into the image and the provenance.
	if o.Repository != "https://github.com/acme/edge-nginx" || !strings.HasPrefix(o.BuilderID, o.Repository+"/.github/workflows/") {
		t.Errorf("origin %+v", o)
	}
}

// Outside Actions, with no flag, the checkout's origin remote names the repository, as an
// https URL: a remote with a token in it is written without the token; a remote that is a
// path names nothing, and with nothing known the request names no repository (no label).
func TestOriginFromGitRemote(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	noActions(t)
	for _, tc := range []struct{ remote, want string }{
		{"https://x-access-token:ghs_SECRET@github.com/acme/edge-nginx.git", forkRepo},
		{"git@github.com:acme/edge-nginx.git", forkRepo},
		{"ssh://git@github.com:22/acme/edge-nginx.git", forkRepo},
		{"/work/main", ""},
		{"", ""},
	} {
		dir := t.TempDir()
		git(t, dir, "init", "-q")
		if tc.remote != "" {
			git(t, dir, "remote", "add", "origin", tc.remote)
		}
		t.Chdir(dir)
		o, code, errs := buildOrigin(t)
		if code != 1 {
			t.Errorf("remote %q: the build was refused (exit %d)\n%s", tc.remote, code, errs)
		}
		want := forge.Origin{}
		if tc.want != "" {
			want = forge.Origin{Repository: tc.want, BuilderID: tc.want + "/ci"}
		}
		if o != want {
			t.Errorf("remote %q: origin %+v, want %+v\n%s", tc.remote, o, want, errs)
		}
		if strings.Contains(o.Repository+o.BuilderID, "ghs_SECRET") {
			t.Errorf("remote %q: the origin carries its credential: %+v", tc.remote, o)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// repositoryURL's forms, and its refusals, which never repeat what was given.
func TestRepositoryURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/acme/edge-nginx":                    forkRepo,
		"https://github.com/acme/edge-nginx/":                   forkRepo,
		"http://github.com/acme/edge-nginx.git":                 forkRepo,
		"https://user:pw@github.com/acme/edge-nginx.git":        forkRepo,
		"git://github.com/acme/edge-nginx.git":                  forkRepo,
		"git@github.com:acme/edge-nginx.git":                    forkRepo,
		"https://git.example.com:8443/group/sub/edge-nginx.git": "https://git.example.com:8443/group/sub/edge-nginx",
		"": "",
	} {
		if got, err := repositoryURL(in); err != nil || got != want {
			t.Errorf("repositoryURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/work/main", "../x", "file:///work/main", "C:/repo", "https://github.com", "https://github.com/acme/../x",
		"https://github.com/acme/x?token=ghs_SECRET", "ext::sh -c ghs_SECRET", "https://bad_host/acme/x", "github.com:/acme"} {
		got, err := repositoryURL(bad)
		if err == nil {
			t.Errorf("repositoryURL(%q) = %q, want a refusal", bad, got)
		} else if strings.Contains(err.Error(), "ghs_SECRET") {
			t.Errorf("repositoryURL(%q) repeats it: %v", bad, err)
		}
	}
}
