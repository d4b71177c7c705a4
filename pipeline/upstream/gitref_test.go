package upstream_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// The releases of the components pinned by git commit, from their recorded tag lists (two
// pages each): AWS-LC's FIPS line (AWS-LC-FIPS-3.3.0) and alpha/beta tags are not releases
// of it, nor are zlib-ng's betas (2.1.1-beta2) or zlib's own tags in its history (v1.2.11);
// the tags naming each version are kept for the update.
func TestGitComponentReleasesFromRecordedResponses(t *testing.T) {
	c := upstream.NewClient(upstream.WithGitHubAPI(recorded(t).GitHubAPI()))
	for _, tc := range []struct {
		component, newest, tag string
		absent                 []string
	}{
		{lock.AWSLC, "5.5.0", "v5.5.0", []string{"3.3.0", "0.1", "1.29.1"}},
		{lock.ZlibNG, "2.2.2", "2.2.2", []string{"1.2.11", "1.2.8", "2.1.1", "2.1.0", "1.9.9"}},
	} {
		vs, tags, err := c.GitHubReleaseTags(context.Background(), tc.component)
		if err != nil {
			t.Fatalf("%s: %v", tc.component, err)
		}
		if got := vs[len(vs)-1].String(); got != tc.newest {
			t.Errorf("%s: newest %s, want %s (all: %s)", tc.component, got, tc.newest, versions(vs))
		}
		if got := tags[tc.newest]; len(got) != 1 || got[0] != tc.tag {
			t.Errorf("%s: tags of %s = %q, want [%s]", tc.component, tc.newest, got, tc.tag)
		}
		all := " " + versions(vs) + " "
		for _, v := range tc.absent {
			if strings.Contains(all, " "+v+" ") {
				t.Errorf("%s: %s listed as a release: %s", tc.component, v, all)
			}
		}
	}
}

// A release tag resolves to its commit and tree through the recorded git database answers:
// nginx's annotated tag through its tag object, AWS-LC's and zlib-ng's lightweight tags
// directly. The values are upstream's (the shipped pipeline/lock/aws-lc.lock.json pins them).
func TestResolveTagFromRecordedResponses(t *testing.T) {
	s := recorded(t)
	c := upstream.NewClient(upstream.WithGitHubAPI(s.GitHubAPI()))
	shipped := awsLCLock(t)
	for _, tc := range []struct {
		component, tag string
		requests       int
	}{
		{lock.Nginx, "release-1.30.4", 3},
		{lock.AWSLC, "v5.5.0", 2},
		{lock.ZlibNG, "2.2.2", 2},
	} {
		before := len(s.Requests())
		got, err := c.ResolveTag(context.Background(), tc.component, tc.tag)
		if err != nil {
			t.Fatalf("%s: %v", tc.tag, err)
		}
		want := shipped.MustComponent(tc.component).Git
		if tc.component == lock.Nginx {
			// The shipped lock pins nginx.org's signed tarball; the tag's commit and tree are
			// those the AWS-LC twin pins (../shared/upstream's archive is the tag's whole tree).
			want = &lock.Git{Commit: "017cf98dcce217946572a896f0992370475e189f", Tree: "296dce3d163a3a0b4151f5c8ab092defb4c32daf"}
		}
		if got.Tag != tc.tag || got.Commit != want.Commit || got.Tree != want.Tree {
			t.Errorf("%s %s = %+v, want commit %s tree %s", tc.component, tc.tag, got, want.Commit, want.Tree)
		}
		if n := len(s.Requests()) - before; n != tc.requests {
			t.Errorf("%s: %d requests, want %d", tc.tag, n, tc.requests)
		}
	}
}

// Answers that are not about the object asked for, or not a commit, are errors naming the
// tag; a missing tag is GitHub's 404.
func TestResolveTagRefusesOddAnswers(t *testing.T) {
	const (
		commit = "1111111111111111111111111111111111111111"
		tree   = "2222222222222222222222222222222222222222"
		other  = "3333333333333333333333333333333333333333"
	)
	ref := func(typ, sha string) []byte {
		return upstreamtest.GitRefJSON("zlib-ng/zlib-ng", "2.2.4", typ, sha)
	}
	for _, tc := range []struct {
		name  string
		setup func(s *upstreamtest.Server)
		want  string
	}{
		{"no such tag", func(s *upstreamtest.Server) {}, "HTTP 404: Not Found"},
		{"ref of another tag", func(s *upstreamtest.Server) {
			s.SetGitHub("zlib-ng/zlib-ng", "git/ref/tags/2.2.4", upstreamtest.GitRefJSON("zlib-ng/zlib-ng", "2.2.3", "commit", commit))
		}, `answered with the ref "refs/tags/2.2.3"`},
		{"tag of a tree", func(s *upstreamtest.Server) {
			s.SetGitHub("zlib-ng/zlib-ng", "git/ref/tags/2.2.4", ref("tree", tree))
		}, `points at a "tree", not a commit`},
		{"another commit", func(s *upstreamtest.Server) {
			s.SetGitHub("zlib-ng/zlib-ng", "git/ref/tags/2.2.4", ref("commit", commit))
			s.SetGitHub("zlib-ng/zlib-ng", "git/commits/"+commit, upstreamtest.GitCommitJSON("zlib-ng/zlib-ng", other, tree, "2.2.4 Release\n"))
		}, "asked for commit " + commit},
		{"bad tree ID", func(s *upstreamtest.Server) {
			s.SetGitHub("zlib-ng/zlib-ng", "git/ref/tags/2.2.4", ref("commit", commit))
			s.SetGitHub("zlib-ng/zlib-ng", "git/commits/"+commit, upstreamtest.GitCommitJSON("zlib-ng/zlib-ng", commit, "TREE", "2.2.4 Release\n"))
		}, `tree ID "TREE"`},
		// Issue 47: git's null ID names no object; an API that answers with it for the tree
		// or the commit once got check-updates --write to pin tree 0000....
		{"null tree ID", func(s *upstreamtest.Server) {
			s.SetGitHub("zlib-ng/zlib-ng", "git/ref/tags/2.2.4", ref("commit", commit))
			s.SetGitHub("zlib-ng/zlib-ng", "git/commits/"+commit, upstreamtest.GitCommitJSON("zlib-ng/zlib-ng", commit, lock.NullID, "2.2.4 Release\n"))
		}, `tree ID "` + lock.NullID + `" is not 40 lower-case hex digits, or is git's null ID`},
		{"null commit ID", func(s *upstreamtest.Server) {
			s.SetGitHub("zlib-ng/zlib-ng", "git/ref/tags/2.2.4", ref("commit", lock.NullID))
		}, `commit ID "` + lock.NullID + `"`},
		{"rate limited", func(s *upstreamtest.Server) { s.FailGitHub("zlib-ng/zlib-ng", http.StatusForbidden) }, "rate limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := upstreamtest.New(t)
			tc.setup(s)
			c := upstream.NewClient(upstream.WithGitHubAPI(s.GitHubAPI()), upstream.WithRetries(0, time.Millisecond))
			_, err := c.ResolveTag(context.Background(), lock.ZlibNG, "2.2.4")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tag 2.2.4 of zlib-ng/zlib-ng") {
				t.Errorf("err = %v, want one about tag 2.2.4 of zlib-ng/zlib-ng containing %q", err, tc.want)
			}
		})
	}
}

// The shipped AWS-LC lock against the recorded upstream: its AWS-LC and zlib-ng are the
// newest releases there (nothing to resolve), and no lookup fails.
func TestCheckShippedAWSLCLockRecorded(t *testing.T) {
	s := recorded(t)
	ch := &upstream.Checker{Releases: upstream.NewClient(upstream.WithGitHubAPI(s.GitHubAPI()), upstream.WithNginxOrg(s.NginxOrg()))}
	rep, err := ch.Check(context.Background(), awsLCLock(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Components {
		if (c.Name == lock.AWSLC || c.Name == lock.ZlibNG) && (c.Update || c.Latest != c.Current || c.Commit != "") {
			t.Errorf("%s: %+v, want current", c.Name, c)
		}
	}
}

func awsLCLock(t *testing.T) *lock.Lock {
	t.Helper()
	b, ok := lock.BuiltinAt(lock.AWSLCPath)
	if !ok {
		t.Fatalf("no shipped lock %s", lock.AWSLCPath)
	}
	return b.Lock()
}
