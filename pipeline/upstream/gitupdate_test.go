package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// checkGit checks the git scenario's lock (components only: the base images have tests of
// their own).
func checkGit(t *testing.T, s *upstreamtest.GitScenario) *upstream.Report {
	t.Helper()
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	ch := &upstream.Checker{
		Releases: upstream.NewClient(upstream.WithGitHubAPI(s.Upstream.GitHubAPI()), upstream.WithRetries(0, time.Millisecond)),
		Now:      func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) },
	}
	rep, err := ch.Check(context.Background(), l)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// gitFetchers are the two ways the update verifies a new commit: git fetches it from the
// repository (the lock's https URL, routed to the local repository) and its tree is
// compared; or the mirror serves the archive of it and its files are hashed as a git tree.
var gitFetchers = []struct {
	name  string
	setup func(t *testing.T, s *upstreamtest.GitScenario) (*source.Fetcher, func(r *upstreamtest.GitRepo) string)
}{
	{"git fetch", func(t *testing.T, s *upstreamtest.GitScenario) (*source.Fetcher, func(*upstreamtest.GitRepo) string) {
		s.RouteGit(t)
		return source.New(source.WithCacheDir(t.TempDir()), source.WithRetries(0), source.WithSink(testenv.Progress(t))),
			func(r *upstreamtest.GitRepo) string { return r.URL }
	}},
	{"mirror archive", func(t *testing.T, s *upstreamtest.GitScenario) (*source.Fetcher, func(*upstreamtest.GitRepo) string) {
		s.ServeArchives(t)
		return source.New(source.WithCacheDir(t.TempDir()), source.WithRetries(0), source.WithMirror(s.Upstream.Mirror())),
			func(r *upstreamtest.GitRepo) string {
				return s.Upstream.Mirror() + "/" + strings.TrimSuffix(r.URL[strings.LastIndex(r.URL, "/")+1:], ".git") + "-" + r.New.Version + "-git.tar.gz"
			}
	}},
}

// The check finds each git-pinned component's newest release on its track (nginx: the 1.30
// stable branch, not mainline 1.31; AWS-LC: not its FIPS line; zlib-ng: not a beta nor
// zlib's own v1.2.11) and resolves its tag to the commit and tree (nginx's annotated tag
// through its tag object).
func TestCheckGitComponents(t *testing.T) {
	s := upstreamtest.NewGitScenario(t)
	rep := checkGit(t, s)
	got := map[string]upstream.ComponentReport{}
	for _, c := range rep.Components {
		got[c.Name] = c
	}
	for _, name := range []string{lock.ZlibNG, lock.AWSLC, lock.Nginx} {
		r, c := s.Repos[name], got[name]
		if !c.Update || c.Latest != r.New.Version || c.Tag != r.New.Tag || c.Commit != r.New.Commit || c.Tree != r.New.Tree {
			t.Errorf("%s: %+v; want %s, tag %s, commit %s, tree %s", name, c, r.New.Version, r.New.Tag, r.New.Commit, r.New.Tree)
		}
	}
	if p := got[lock.PCRE2]; p.Update || p.Commit != "" {
		t.Errorf("pcre2: %+v, want current", p)
	}
	if len(rep.Failed) > 0 {
		t.Errorf("failed: %v", rep.Failed)
	}
}

// wantGitLock is before with each named component moved to its repository's new release as
// the update writes it: version, tag, commit, tree, and the "unsigned" reason with the locked
// tag and version replaced.
func wantGitLock(t *testing.T, s *upstreamtest.GitScenario, before []byte, names ...string) []byte {
	t.Helper()
	want, err := lock.Parse(before)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		r, c := s.Repos[name], want.MustComponent(name)
		c.Unsigned = strings.ReplaceAll(strings.ReplaceAll(c.Unsigned, r.Locked.Tag, r.New.Tag), r.Locked.Version, r.New.Version)
		c.Version = r.New.Version
		c.Git = &lock.Git{Repository: c.Git.Repository, Tag: r.New.Tag, Commit: r.New.Commit, Tree: r.New.Tree}
		want.SetComponent(c)
	}
	b, err := want.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// check-updates --write moves each git-pinned component to its new release's commit once the
// commit's tree is verified, either way it is fetched; the PR body shows the commit and tree
// (no tarball or checksum), and the fetcher the build uses accepts the new entries.
func TestUpdateGitComponents(t *testing.T) {
	for _, tc := range gitFetchers {
		t.Run(tc.name, func(t *testing.T) {
			s := upstreamtest.NewGitScenario(t)
			f, from := tc.setup(t, s)
			before := s.LockBytes(t)
			applied, err := (&upstream.Updater{Fetcher: f}).UpdateFile(context.Background(), s.LockFile, checkGit(t, s))
			if err != nil {
				t.Fatalf("UpdateFile: %v", err)
			}
			want := wantGitLock(t, s, before, lock.ZlibNG, lock.AWSLC, lock.Nginx)
			if after := s.LockBytes(t); !bytes.Equal(after, want) {
				t.Fatalf("lock after update:\n%s\nwant:\n%s", after, want)
			}
			if len(applied) != 3 {
				t.Fatalf("applied %+v, want zlib_ng, aws_lc, nginx", applied)
			}
			for _, a := range applied {
				r := s.Repos[a.Name]
				if a.Git == nil || a.Git.Commit != r.New.Commit || a.Git.Tree != r.New.Tree || a.FetchedFrom != from(r) || a.UnsignedWas == "" || a.SHA256 != "" {
					t.Errorf("%s: applied %+v; want commit %s tree %s fetched from %s, reason rewritten", a.Name, a, r.New.Commit, r.New.Tree, from(r))
				}
			}
			body := upstream.PRBody(applied, nil, nil)
			for _, w := range []string{
				"### aws_lc 5.5.0 → 5.6.0", "| tag | `v5.5.0` → `v5.6.0`",
				"| commit | `" + s.Repos[lock.AWSLC].New.Commit + "`", "| tree | `" + s.Repos[lock.AWSLC].New.Tree + "`",
				"| tag | `release-1.30.4` → `release-1.30.6`", "pinned by the commit of tag v5.6.0",
			} {
				if !strings.Contains(body, w) {
					t.Errorf("PR body lacks %q:\n%s", w, body)
				}
			}
			if strings.Contains(body, "| tarball |") || strings.Contains(body, "| sha256 |") || strings.Contains(body, "top directory") {
				t.Errorf("PR body shows tarball fields for git components:\n%s", body)
			}
			l, err := lock.Load(s.LockFile)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{lock.ZlibNG, lock.AWSLC, lock.Nginx} {
				if v, err := f.Fetch(context.Background(), l.MustComponent(name)); err != nil || v.Tree != s.Repos[name].New.Tree {
					t.Errorf("Fetch of the updated %s: %+v, %v", name, v, err)
				}
			}
			if rep := checkGit(t, s); rep.Changed() {
				t.Errorf("a second check still finds changes: %+v", rep.Components)
			}
		})
	}
}

// A commit whose files are not the tree GitHub reports for it is refused, naming both trees
// (either way it is fetched): zlib-ng's entry stays byte for byte as it was while AWS-LC's and
// nginx's updates are written; alone, it leaves the whole lock unchanged.
func TestUpdateGitTreeMismatchRefusedAlone(t *testing.T) {
	for _, tc := range gitFetchers {
		t.Run(tc.name, func(t *testing.T) {
			s := upstreamtest.NewGitScenario(t)
			f, _ := tc.setup(t, s)
			ng := s.Repos[lock.ZlibNG]
			// GitHub says the new commit has the locked commit's tree.
			s.SetCommit(ng, ng.New.Commit, ng.Locked.Tree)
			before := s.LockBytes(t)
			rep := checkGit(t, s)
			u := &upstream.Updater{Fetcher: f}
			applied, err := u.UpdateFile(context.Background(), s.LockFile, rep)
			var re *upstream.RefusedError
			if !errors.As(err, &re) || !re.Wrote || len(re.Refused) != 1 || re.Refused[0].Name != lock.ZlibNG {
				t.Fatalf("err = %v, want zlib_ng refused and the rest written", err)
			}
			msg := re.Refused[0].Error()
			for _, w := range []string{ng.Locked.Tree, ng.New.Tree, ng.New.Commit, "tag 2.2.4"} {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal %q does not name %s", msg, w)
				}
			}
			if fix := re.Refused[0].Fix; !strings.Contains(fix, "keep the lock as it is") {
				t.Errorf("fix = %q", fix)
			}
			if len(applied) != 2 || applied[0].Name != lock.AWSLC || applied[1].Name != lock.Nginx {
				t.Errorf("applied %+v, want aws_lc and nginx", applied)
			}
			if after, want := s.LockBytes(t), wantGitLock(t, s, before, lock.AWSLC, lock.Nginx); !bytes.Equal(after, want) {
				t.Fatalf("lock after update:\n%s\nwant:\n%s", after, want)
			}

			// Only zlib-ng offered (the others already moved): nothing is written at all.
			written := s.LockBytes(t)
			rep = checkGit(t, s)
			_, err = u.UpdateFile(context.Background(), s.LockFile, rep)
			if !errors.As(err, &re) || re.Wrote || len(re.Refused) != 1 {
				t.Fatalf("err = %v, want zlib_ng refused and nothing written", err)
			}
			if !bytes.Equal(written, s.LockBytes(t)) {
				t.Error("the lock changed although its only update was refused")
			}
		})
	}
}

// countingFetcher is the source fetcher, counting what it was asked to fetch.
type countingFetcher struct {
	*source.Fetcher
	fetched []string
}

func (c *countingFetcher) Fetch(ctx context.Context, comp lock.Component) (source.Verified, error) {
	c.fetched = append(c.fetched, comp.Name+" "+comp.Version)
	return c.Fetcher.Fetch(ctx, comp)
}

// An AWS-LC lock is never moved to an nginx older than AWS-LC needs: the refusal names the
// version needed, nothing of that nginx is fetched, and the other updates are written.
func TestUpdateAWSLCLockRefusesOldNginx(t *testing.T) {
	s := upstreamtest.NewGitScenario(t)
	s.ServeArchives(t)
	f := &countingFetcher{Fetcher: source.New(source.WithCacheDir(t.TempDir()), source.WithRetries(0), source.WithMirror(s.Upstream.Mirror()))}
	rep := checkGit(t, s)
	for i, c := range rep.Components {
		if c.Name == lock.Nginx {
			// A report as a branch track "1.28" would make it, were the lock's nginx older.
			rep.Components[i].Latest, rep.Components[i].Tag = "1.28.3", "release-1.28.3"
		}
	}
	before := s.LockBytes(t)
	applied, err := (&upstream.Updater{Fetcher: f}).UpdateFile(context.Background(), s.LockFile, rep)
	var re *upstream.RefusedError
	if !errors.As(err, &re) || !re.Wrote || len(re.Refused) != 1 || re.Refused[0].Name != lock.Nginx {
		t.Fatalf("err = %v, want nginx refused and the rest written", err)
	}
	if msg := re.Refused[0].Error(); !strings.Contains(msg, "nginx 1.28.3 cannot be built with AWS-LC") || !strings.Contains(msg, "from "+lock.MinNginxForAWSLC) {
		t.Errorf("refusal %q does not say nginx %s is needed", msg, lock.MinNginxForAWSLC)
	}
	if fix := re.Refused[0].Fix; !strings.Contains(fix, lock.MinNginxForAWSLC) {
		t.Errorf("fix %q does not name %s", fix, lock.MinNginxForAWSLC)
	}
	for _, x := range f.fetched {
		if strings.HasPrefix(x, "nginx") {
			t.Errorf("fetched %s although it was refused", x)
		}
	}
	if len(applied) != 2 {
		t.Errorf("applied %+v, want zlib_ng and aws_lc", applied)
	}
	if after, want := s.LockBytes(t), wantGitLock(t, s, before, lock.ZlibNG, lock.AWSLC); !bytes.Equal(after, want) {
		t.Fatalf("lock after update:\n%s\nwant:\n%s", after, want)
	}
}

// A lock that pins a component's commits from another repository than the one its releases
// are looked up in (a fork) is not moved: the check fails for it alone, saying why.
func TestCheckGitRefusesAnotherRepository(t *testing.T) {
	s := upstreamtest.NewGitScenario(t)
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	c := l.MustComponent(lock.AWSLC)
	c.Git.Repository = "https://github.com/someone/aws-lc.git"
	l.SetComponent(c)
	if err := l.Write(s.LockFile); err != nil {
		t.Fatal(err)
	}
	ch := &upstream.Checker{Releases: upstream.NewClient(upstream.WithGitHubAPI(s.Upstream.GitHubAPI()), upstream.WithRetries(0, time.Millisecond))}
	rep, err := ch.Check(context.Background(), l)
	if err == nil || len(rep.Failed) != 1 || rep.Failed[0].Name != lock.AWSLC ||
		!strings.Contains(err.Error(), "someone/aws-lc") || !strings.Contains(rep.Failed[0].Fix, "by hand") {
		t.Fatalf("err = %v, failed %+v; want aws_lc alone refused for its repository", err, rep.Failed)
	}
	for _, cr := range rep.Components {
		if cr.Name == lock.ZlibNG && cr.Commit != s.Repos[lock.ZlibNG].New.Commit {
			t.Errorf("zlib_ng: %+v, want it resolved regardless", cr)
		}
	}
}

// A new release whose tag does not resolve (GitHub answers 404 for it) fails the check for
// that component alone; the update refuses it once and writes the others.
func TestUpdateGitUnresolvedTagRefusedOnce(t *testing.T) {
	s := upstreamtest.NewGitScenario(t)
	s.ServeArchives(t)
	s.Upstream.RemoveGitHub("aws/aws-lc", "git/ref/tags/v5.6.0")
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	ch := &upstream.Checker{Releases: upstream.NewClient(upstream.WithGitHubAPI(s.Upstream.GitHubAPI()), upstream.WithRetries(0, time.Millisecond))}
	rep, err := ch.Check(context.Background(), l)
	if err == nil || len(rep.Failed) != 1 || rep.Failed[0].Name != lock.AWSLC || !strings.Contains(err.Error(), "tag v5.6.0 of aws/aws-lc") || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("check: err %v, failed %+v; want aws_lc's tag unresolved", err, rep.Failed)
	}
	f := source.New(source.WithCacheDir(t.TempDir()), source.WithRetries(0), source.WithMirror(s.Upstream.Mirror()))
	_, err = (&upstream.Updater{Fetcher: f}).UpdateFile(context.Background(), s.LockFile, rep)
	var re *upstream.RefusedError
	if !errors.As(err, &re) || !re.Wrote || len(re.Refused) != 1 {
		t.Fatalf("err = %v, want aws_lc refused once and the rest written", err)
	}
	after, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	if after.MustComponent(lock.AWSLC).Version != "5.5.0" || after.MustComponent(lock.ZlibNG).Version != "2.2.4" {
		t.Errorf("lock after update: aws_lc %s, zlib_ng %s; want 5.5.0 and 2.2.4", after.MustComponent(lock.AWSLC).Version, after.MustComponent(lock.ZlibNG).Version)
	}
}
