package lock

import (
	"errors"
	"strings"
	"testing"
)

// The shipped AWS-LC variant lock parses, holds exactly AWS-LC and zlib-ng, pins real
// upstream commits and trees for the git sources (never a file made here), and nginx by
// nginx.org's signed release tarball, as the default lock does.
func TestShippedAWSLCLock(t *testing.T) {
	b, ok := BuiltinAt(AWSLCPath)
	if !ok {
		t.Fatal("no built-in lock at", AWSLCPath)
	}
	l := b.Lock()
	if l.TLS().Name != AWSLC || l.ZlibLibrary().Name != ZlibNG {
		t.Errorf("libraries %s, %s", l.TLS().Name, l.ZlibLibrary().Name)
	}
	want := map[string][2]string{
		AWSLC:  {"991e67ff4cf04df4dd89e407f8b920c6936cb56a", "ae54cd9455f9630451d505855afe808a9f028b25"},
		ZlibNG: {"c939498c7f2a1d645833a98251365e2c814fd736", "3bef1892d8c3e63190221af625cb140139418c3f"},
	}
	for name, w := range want {
		g := l.MustComponent(name).Git
		if g == nil || g.Commit != w[0] || g.Tree != w[1] {
			t.Errorf("%s: git %+v, want commit %s tree %s", name, g, w[0], w[1])
		}
	}
	if n, d := l.MustComponent(Nginx), Default().MustComponent(Nginx); n.Git != nil || n.Signature == nil || n.SHA256 != d.SHA256 {
		t.Errorf("nginx: %+v, want the default lock's signed tarball (%s)", n, d.SHA256)
	}
	if got := l.MustComponent(AWSLC).FileName(); got != "aws-lc-5.5.0-git.tar.gz" {
		t.Errorf("file name %q", got)
	}
}

// Every rule of the libraries' roles, and of git sources, refuses with the field and a fix.
func TestLibraryRoles(t *testing.T) {
	variant := func() *Lock { b, _ := BuiltinAt(AWSLCPath); return b.Lock() }
	base := Default()
	cases := []struct {
		name   string
		change func(l *Lock)
		want   string
	}{
		{"AWS-LC with nginx 1.26", func(l *Lock) {
			seed, err := Load("seed.lock.json")
			if err != nil {
				t.Fatal(err)
			}
			l.Components = append(l.Components[:0:0], seed.Components...)
			l.Components = append(l.Components[:2], l.Components[3:]...) // drop openssl
			l.SetComponent(variant().MustComponent(AWSLC))
		}, "nginx 1.26.2 cannot be built with AWS-LC (aws_lc): nginx supports it from 1.29.2"},
		{"two TLS libraries", func(l *Lock) { l.SetComponent(base.MustComponent(OpenSSL)) }, "openssl and aws_lc: a lock builds with one TLS library"},
		{"no zlib", func(l *Lock) {
			var keep []Component
			for _, c := range l.Components {
				if c.Name != ZlibNG {
					keep = append(keep, c)
				}
			}
			l.Components = keep
		}, `no zlib: add one of zlib, zlib_ng (the default is "zlib")`},
		{"git and url", func(l *Lock) {
			c := l.MustComponent(AWSLC)
			c.URL = "https://example.org/a.tar.gz"
			l.SetComponent(c)
		}, "is set together with url/sha256"},
		{"short commit", func(l *Lock) {
			c := l.MustComponent(AWSLC)
			g := *c.Git
			g.Commit = "991e67ff"
			c.Git = &g
			l.SetComponent(c)
		}, `.git.commit: "991e67ff" is not a full commit ID`},
		// Issue 47: git's null ID names no object; a lock pinning it pinned nothing.
		{"null commit", func(l *Lock) {
			c := l.MustComponent(AWSLC)
			g := *c.Git
			g.Commit = NullID
			c.Git = &g
			l.SetComponent(c)
		}, ".git.commit: is all zeros, git's null ID"},
		{"null tree", func(l *Lock) {
			c := l.MustComponent(AWSLC)
			g := *c.Git
			g.Tree = NullID
			c.Git = &g
			l.SetComponent(c)
		}, ".git.tree: is all zeros, git's null ID"},
		{"no reason", func(l *Lock) {
			c := l.MustComponent(AWSLC)
			c.Unsigned = ""
			l.SetComponent(c)
		}, ".unsigned: is missing: a git source has no detached signature"},
		{"plain http repository", func(l *Lock) {
			c := l.MustComponent(AWSLC)
			g := *c.Git
			g.Repository = "http://github.com/aws/aws-lc.git"
			c.Git = &g
			l.SetComponent(c)
		}, "must be https"},
	}
	for _, tc := range cases {
		l := variant()
		tc.change(l)
		err := l.Validate()
		var fe *fieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a fieldError containing %q", tc.name, err, tc.want)
		}
	}
	if err := variant().Validate(); err != nil {
		t.Errorf("the shipped variant lock: %v", err)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"1.29.2", "1.29.2", 0}, {"1.30.4", "1.29.2", 1}, {"1.26.2", "1.29.2", -1}, {"1.29", "1.29.0", 0}, {"1.100.0", "1.29.9", 1}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
