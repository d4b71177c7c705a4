package upstreamtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// GitRev is a release of a git-pinned component: its tag, the commit the tag points at and
// that commit's tree.
type GitRev struct{ Version, Tag, Commit, Tree string }

// GitRepo is a real local git repository standing in for an upstream repository.
type GitRepo struct {
	Dir string // its work tree (the repository is Dir/.git)
	// URL is the upstream repository the lock pins, which the repository stands in for.
	URL string
	// GitHub is "owner/name".
	GitHub string
	// Locked is the release the lock pins; New the one upstream lists beyond it.
	Locked, New GitRev
	// Annotated: its release tags are annotated tags (nginx's), not lightweight ones.
	Annotated bool
	// TagObjects are the annotated tags' object IDs, by tag name.
	TagObjects map[string]string
}

// gitTargets are the releases a GitScenario offers beyond the shipped AWS-LC lock's: a new
// zlib-ng, a new AWS-LC and nginx's next 1.30 stable release.
var gitTargets = map[string]string{lock.ZlibNG: "2.2.4", lock.AWSLC: "5.6.0", lock.Nginx: "1.30.6"}

// GitScenario is the shipped AWS-LC variant lock (pipeline/lock/aws-lc.lock.json), with
// nginx pinned by git as its twin pins it, against a loopback upstream: its git-pinned components (zlib-ng, AWS-LC, nginx) are real local git
// repositories, each with the locked release and a newer one (gitTargets) tagged as upstream
// tags them (nginx's tags annotated), and the lock copy pins their locked commits and trees
// (repository URLs, tags, versions, tracks and "unsigned" reasons as shipped). The GitHub API
// lists those tags beside ones that must be ignored (AWS-LC's FIPS line, zlib-ng betas and
// zlib's own tags, nginx mainline) and answers the git database requests for every tag and
// commit; PCRE2 is current. Route the lock's https repositories to the local ones with
// RouteGit, or serve the commits' archives on the mirror with ServeArchives.
type GitScenario struct {
	Upstream *Server
	Registry string
	LockFile string
	Repos    map[string]*GitRepo
	// BuilderDigest and RuntimeDigest are the index digests the base image tags point at.
	BuilderDigest, RuntimeDigest string
}

// NewGitScenario builds it for the test's lifetime.
func NewGitScenario(t testing.TB) *GitScenario {
	t.Helper()
	testenv.Tool(t, "git", "git")
	s := &GitScenario{Upstream: New(t), Repos: map[string]*GitRepo{}}
	l, err := lock.Load(filepath.Join(testenv.RepoRoot(), lock.AWSLCPath))
	if err != nil {
		t.Fatal(err)
	}
	// nginx pinned by git, as the AWS-LC twin pins it: the shipped lock pins nginx.org's
	// signed tarball, and a git-pinned nginx is a lock shape the update must keep handling.
	twin, err := lock.Load(testenv.AWSLCTestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	l.SetComponent(twin.MustComponent(lock.Nginx))
	root := t.TempDir()
	for _, name := range []string{lock.ZlibNG, lock.AWSLC, lock.Nginx} {
		c := l.MustComponent(name)
		r := newGitRepo(t, root, c, gitTargets[name])
		s.Repos[name] = r
		c.Git.Commit, c.Git.Tree = r.Locked.Commit, r.Locked.Tree
		l.SetComponent(c)
		s.serveGitHub(r)
	}
	s.Upstream.SetGitHub("zlib-ng/zlib-ng", "releases", ReleasesJSON("zlib-ng/zlib-ng", "2.2.4", "2.2.3-beta1!pre", "2.2.2"))
	s.Upstream.SetGitHub("zlib-ng/zlib-ng", "tags", TagsJSON("zlib-ng/zlib-ng", "2.2.4", "2.2.3-beta1", "2.2.2", "v1.2.11"))
	s.Upstream.SetGitHub("aws/aws-lc", "releases", ReleasesJSON("aws/aws-lc", "v5.6.0", "AWS-LC-FIPS-3.4.0", "v5.5.0"))
	s.Upstream.SetGitHub("aws/aws-lc", "tags", TagsJSON("aws/aws-lc", "v5.6.0", "AWS-LC-FIPS-3.4.0", "v5.5.0", "v1.73.0"))
	s.Upstream.SetGitHub("nginx/nginx", "releases", ReleasesJSON("nginx/nginx", "release-1.31.5", "release-1.30.6"))
	s.Upstream.SetGitHub("nginx/nginx", "tags", TagsJSON("nginx/nginx", "release-1.31.5", "release-1.30.6", "release-1.31.4", "release-1.30.4", "release-1.28.3"))
	s.Upstream.SetGitHub("PCRE2Project/pcre2", "releases", ReleasesJSON("PCRE2Project/pcre2", "pcre2-10.48"))
	s.Upstream.SetGitHub("PCRE2Project/pcre2", "tags", TagsJSON("PCRE2Project/pcre2", "pcre2-10.48"))

	s.LockFile, s.Registry, s.BuilderDigest, s.RuntimeDigest = lockAndBases(t, l, "aws-lc.lock.json")
	return s
}

// newGitRepo makes the repository standing in for c's: a commit tagged as c's locked release
// and one tagged as release v, each with a small tree (a file, an executable, a symlink).
func newGitRepo(t testing.TB, root string, c lock.Component, v string) *GitRepo {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(c.Git.Repository), ".git")
	r := &GitRepo{Dir: filepath.Join(root, base), URL: c.Git.Repository, Annotated: c.Name == lock.Nginx, TagObjects: map[string]string{}}
	r.GitHub = strings.TrimSuffix(strings.TrimPrefix(c.Git.Repository, "https://github.com/"), ".git")
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git(t, "init", "-q")
	newTag := strings.Replace(c.Git.Tag, c.Version, v, 1)
	for i, rel := range []struct{ version, tag string }{{c.Version, c.Git.Tag}, {v, newTag}} {
		os.WriteFile(filepath.Join(r.Dir, "README"), []byte(fmt.Sprintf("%s %s (a test stand-in)\n", c.Name, rel.version)), 0o644)
		os.WriteFile(filepath.Join(r.Dir, "configure"), []byte("#!/bin/sh\necho "+rel.version+"\n"), 0o755)
		os.Remove(filepath.Join(r.Dir, "link"))
		os.Symlink("configure", filepath.Join(r.Dir, "link"))
		r.git(t, "add", "-A")
		date := strconv.Itoa(1780000000+i*86400) + " +0000"
		r.gitEnv(t, []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, "commit", "-q", "-m", rel.version+" release")
		if r.Annotated {
			r.gitEnv(t, []string{"GIT_COMMITTER_DATE=" + date}, "tag", "-a", "-m", rel.tag+" tag", rel.tag)
			r.TagObjects[rel.tag] = r.git(t, "rev-parse", "refs/tags/"+rel.tag)
		} else {
			r.git(t, "tag", rel.tag)
		}
		rev := GitRev{Version: rel.version, Tag: rel.tag, Commit: r.git(t, "rev-parse", "HEAD"), Tree: r.git(t, "rev-parse", "HEAD^{tree}")}
		if i == 0 {
			r.Locked = rev
		} else {
			r.New = rev
		}
	}
	return r
}

func (r *GitRepo) git(t testing.TB, args ...string) string {
	t.Helper()
	return r.gitEnv(t, nil, args...)
}

func (r *GitRepo) gitEnv(t testing.TB, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir, "-c", "user.name=Release Manager", "-c", "user.email=release@example.test", "-c", "tag.gpgSign=false", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, r.Dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// serveGitHub answers the git database requests for both of r's releases.
func (s *GitScenario) serveGitHub(r *GitRepo) {
	for _, rev := range []GitRev{r.Locked, r.New} {
		s.SetCommit(r, rev.Commit, rev.Tree)
		if obj, ok := r.TagObjects[rev.Tag]; ok {
			s.Upstream.SetGitHub(r.GitHub, "git/ref/tags/"+rev.Tag, GitRefJSON(r.GitHub, rev.Tag, "tag", obj))
			s.Upstream.SetGitHub(r.GitHub, "git/tags/"+obj, gitTagJSON(r.GitHub, obj, rev.Tag, rev.Commit))
		} else {
			s.Upstream.SetGitHub(r.GitHub, "git/ref/tags/"+rev.Tag, GitRefJSON(r.GitHub, rev.Tag, "commit", rev.Commit))
		}
	}
}

// SetCommit makes the GitHub API say that commit's tree is tree (a lie, when it is not).
func (s *GitScenario) SetCommit(r *GitRepo, commit, tree string) {
	s.Upstream.SetGitHub(r.GitHub, "git/commits/"+commit, GitCommitJSON(r.GitHub, commit, tree, "release\n"))
}

// RouteGit makes git, for the test's lifetime, fetch each lock repository URL from its
// local stand-in (url.<file URL>.insteadOf through GIT_CONFIG_COUNT, which the source
// fetcher's git honours). The test must not run in parallel.
func (s *GitScenario) RouteGit(t *testing.T) {
	t.Helper()
	i := 0
	for _, name := range []string{lock.ZlibNG, lock.AWSLC, lock.Nginx} {
		r := s.Repos[name]
		t.Setenv(fmt.Sprintf("GIT_CONFIG_KEY_%d", i), "url.file://"+r.Dir+".insteadOf")
		t.Setenv(fmt.Sprintf("GIT_CONFIG_VALUE_%d", i), r.URL)
		i++
	}
	t.Setenv("GIT_CONFIG_COUNT", strconv.Itoa(i))
}

// ServeArchives serves on the mirror, for each release of each repository, the archive of
// its commit as the source fetcher looks it up there (<repository>-<version>-git.tar.gz,
// everything under <repository>-<version>/).
func (s *GitScenario) ServeArchives(t testing.TB) {
	t.Helper()
	for _, r := range s.Repos {
		base := strings.TrimSuffix(filepath.Base(r.URL), ".git")
		for _, rev := range []GitRev{r.Locked, r.New} {
			out := filepath.Join(t.TempDir(), "archive.tar.gz")
			r.git(t, "archive", "--format=tar.gz", "--prefix="+base+"-"+rev.Version+"/", "-o", out, rev.Commit)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			s.Upstream.SetFile(base+"-"+rev.Version+"-git.tar.gz", b)
		}
	}
}

// LockBytes returns the lock file's current content.
func (s *GitScenario) LockBytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
