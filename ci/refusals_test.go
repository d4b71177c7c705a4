package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// Issue 47, item 7: small refusals, each a usage error (exit 2) naming the input and the fix,
// before anything is fetched, trained or contacted: an RSA key under 2,048 bits and a key
// file holding two keys (--sign-key); --platform with duplicates, empty entries or more
// entries than there are platforms (build and pgo-profile, which share it); pgo-profile's
// --dir and --url, checked before its training; bench --variant-tree's own name in its
// messages; and --registry-timeout too large for a duration, with the accepted range.
func TestSmallRefusals(t *testing.T) {
	dir := t.TempDir()
	writePEM := func(name string, blocks ...*pem.Block) string {
		var b []byte
		for _, bl := range blocks {
			b = append(b, pem.EncodeToMemory(bl)...)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weak := writePEM("rsa1024.pem", &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsa1024)})
	ec := func() *pem.Block {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	two := writePEM("two.pem", ec(), ec())
	aFile := filepath.Join(dir, "a-file")
	os.WriteFile(aFile, nil, 0o644)
	srv, requests := countingMirror(t)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/nginx"
	build := func(args ...string) []string {
		return append([]string{"build", "--engine", "host", "--lock", testLockPath, "--mirror", srv.URL, "--cache", t.TempDir()}, args...)
	}
	push := func(args ...string) []string { return build(append([]string{"--push", "--image", reg}, args...)...) }
	pgo := func(args ...string) []string {
		return append([]string{"pgo-profile", "--engine", "host", "--lock", testLockPath, "--mirror", srv.URL, "--cache", t.TempDir()}, args...)
	}
	fifty := strings.TrimSuffix(strings.Repeat("linux/amd64,", 50), ",")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"--sign-key RSA-1024", push("--sign-key", weak), []string{"--sign-key " + weak + " is a 1024-bit RSA key, under the 2048 bits", "openssl genpkey"}},
		{"--sign-key two keys", push("--sign-key", two), []string{"--sign-key " + two + " holds 2 private keys", "the one key that signs"}},
		{"build --platform twice", build("--tree", filepath.Join(dir, "t1"), "--platform", "linux/amd64,linux/amd64"), []string{`"linux/amd64,linux/amd64" for flag -platform: names linux/amd64 twice`, "give linux/amd64 or linux/arm64"}},
		{"build --platform empty entry", build("--tree", filepath.Join(dir, "t2"), "--platform", "linux/amd64,"), []string{`"linux/amd64," for flag -platform: has an empty entry`}},
		{"build --platform fifty", build("--tree", filepath.Join(dir, "t3"), "--platform", fifty), []string{"for flag -platform: has 50 entries, more than the 2 supported platforms", "linux/amd64 or linux/arm64"}},
		{"build --platform unknown", build("--tree", filepath.Join(dir, "t4"), "--platform", "linux/s390x"), []string{`for flag -platform: "linux/s390x" is not supported`}},
		{"build --platform blank", build("--tree", filepath.Join(dir, "t6"), "--platform", " , "), []string{`" , " for flag -platform: names no platform`}},
		{"pgo-profile --platform twice", pgo("--dir", filepath.Join(dir, "p1"), "--platform", "linux/arm64,linux/arm64"), []string{"names linux/arm64 twice"}},
		{"pgo-profile --dir a file", pgo("--dir", aFile), []string{"--dir", aFile + " is not a directory"}},
		{"pgo-profile --dir under a file", pgo("--dir", filepath.Join(aFile, "profiles")), []string{"--dir", aFile + " is not a directory"}},
		{"pgo-profile --url with a query", pgo("--dir", filepath.Join(dir, "p2"), "--url", "https://example.org/profiles?x=1"), []string{"--url", "without a query"}},
		{"bench --variant-tree", []string{"bench", "--nginx", "/bin/true", "--variant-tree", filepath.Join(dir, "missing")}, []string{"--variant-tree " + filepath.Join(dir, "missing") + " has no usr/sbin/nginx"}},
		{"--registry-timeout too large", build("--tree", filepath.Join(dir, "t5"), "--registry-timeout", "9999999999999h"), []string{"-registry-timeout", "give a duration from 1s to 1h"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runWithin(t, 10*time.Second, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range []string{"--tree " + filepath.Join(dir, "missing"), "parse error", "usage: --variant-tree: usage:"} {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr says %q:\n%s", w, stderr)
				}
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("refused after %s", took)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback server", n)
	}
}

// Issue 47 (last round's leftover): a tag list with tags, none of which names a release,
// said "GitHub lists no release tags". It says how many it listed and a few of them.
func TestCheckUpdatesSaysWhatTagsItSaw(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	s.Upstream.SetGitHub("openssl/openssl", "releases", upstreamtest.ReleasesJSON("openssl/openssl", "nightly-20260101"))
	s.Upstream.SetGitHub("openssl/openssl", "tags", upstreamtest.TagsJSON("openssl/openssl", "nightly-20260101", "fips-candidate"))
	code, out, errs := runCheckUpdates(t, s, "--skip-images")
	all := out + errs
	if code == 0 {
		t.Errorf("exit 0\n%s", all)
	}
	for _, w := range []string{"GitHub lists 2 tags and 1 releases for openssl/openssl, none of them a release tag", `"nightly-20260101"`, `"fips-candidate"`} {
		if !strings.Contains(all, w) {
			t.Errorf("output lacks %q:\n%s", w, all)
		}
	}
	if strings.Contains(all, "lists no release tags") {
		t.Errorf("tags that do not name a release are worded as none:\n%s", all)
	}
}
