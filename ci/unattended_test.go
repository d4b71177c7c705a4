package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// replay is the shipped lock against a recorded upstream that offers newer nginx stable,
// OpenSSL LTS, PCRE2 and zlib releases and new base image digests, as a scheduled run meets
// it: the signers of nginx, OpenSSL and zlib are vendored (beside the lock copy), PCRE2's is
// pinned but not vendored and only a key server on loopback has it.
type replay struct {
	*upstreamtest.DefaultLockScenario
	keyserver *upstreamtest.Keyserver
	keysDir   string
	body      string
}

func newReplay(t *testing.T) *replay {
	t.Helper()
	notInActions(t)
	s := upstreamtest.NewDefaultLockScenario(t)
	r := &replay{DefaultLockScenario: s, keyserver: upstreamtest.NewKeyserver(t), keysDir: lock.KeysDirBeside(s.LockFile),
		body: filepath.Join(t.TempDir(), "body.md")}
	if err := os.MkdirAll(r.keysDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{lock.Nginx, lock.OpenSSL, lock.Zlib} {
		k := s.Keys[name]
		if err := os.WriteFile(filepath.Join(r.keysDir, k.Fingerprint+".asc"), k.Armored, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.keyserver.Serve(s.Keys[lock.PCRE2].Fingerprint, s.Keys[lock.PCRE2].Armored)
	// zlib 1.3.2, which the recorded responses predate.
	s.ServeRelease(t, lock.Zlib, "1.3.2")
	s.Upstream.SetGitHub("madler/zlib", "releases", upstreamtest.ReleasesJSON("madler/zlib", "v1.3.2", "v1.3.1"))
	s.Upstream.SetGitHub("madler/zlib", "tags", upstreamtest.TagsJSON("madler/zlib", "v1.3.2", "v1.3.1"))
	return r
}

// run runs check-updates --write against it with no key trusted but the files in keysDir.
func (r *replay) run(t *testing.T, extra ...string) (int, string, string) {
	t.Helper()
	return runCheckUpdatesOn(t, r.Upstream, r.Registry, r.LockFile, nil,
		append([]string{"--write", "--pr-body", r.body, "--keyserver", r.keyserver.URL}, extra...)...)
}

func (r *replay) keyFiles(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(r.keysDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// The unattended loop's first day in a real repository: one run moves all four components
// and pins both images, vendoring PCRE2's pinned signer key in the same change; afterwards
// every source of the new lock verifies with no key server at all.
func TestUnattendedReplayOfTheShippedLock(t *testing.T) {
	r := newReplay(t)
	code, out, errs := r.run(t)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	l, err := lock.Load(r.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{lock.Nginx: "1.28.0", lock.OpenSSL: "3.5.4", lock.PCRE2: "10.46", lock.Zlib: "1.3.2"} {
		if c := l.MustComponent(name); c.Version != want {
			t.Errorf("%s = %s, want %s", name, c.Version, want)
		}
	}
	if l.Images.Builder.Digest != r.BuilderDigest || l.Images.Runtime.Digest != r.RuntimeDigest {
		t.Errorf("images = %+v; want both pinned to %s and %s", l.Images, r.BuilderDigest, r.RuntimeDigest)
	}
	pcre := r.Keys[lock.PCRE2]
	kf := filepath.Join(r.keysDir, pcre.Fingerprint+".asc")
	b, err := os.ReadFile(kf)
	if err != nil {
		t.Fatalf("PCRE2's key was not vendored: %v", err)
	}
	el, err := readArmoredKeys(b)
	if err != nil || len(el) != 1 || el[0] != pcre.Fingerprint {
		t.Errorf("%s holds %v (%v); want exactly the key %s", kf, el, err, pcre.Fingerprint)
	}
	body, err := os.ReadFile(r.body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### New signer keys: review these keys",
		"| `pipeline/lock/keys/" + pcre.Fingerprint + ".asc` | `" + pcre.Fingerprint + "` | pcre2 Test Signer (nginx-forge test key) <pcre2.test.signer@example.test> | never | " + r.keyserver.URL,
		"| signer | `" + pcre.Fingerprint + "`, pinned in the lock; its key is vendored by this pull request",
		"### zlib 1.3.1 → 1.3.2", "### pcre2 10.44 → 10.46",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("PR body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(string(body), "### Refused") {
		t.Errorf("PR body lists refusals:\n%s", body)
	}

	// The build's verification of the new lock: no key server (one that refuses every
	// connection), no mirror keys; the keys directory beside the lock is all it has.
	asked := len(r.keyserver.Requests())
	f := source.New(source.WithMirror(r.Upstream.Mirror()), source.WithCacheDir(t.TempDir()), source.WithKeysDir(r.keysDir),
		source.WithKeyserver("http://127.0.0.1:1"), source.WithRetries(0))
	verified, err := f.FetchAll(context.Background(), l)
	if err != nil {
		t.Fatalf("verifying the updated lock without a key server: %v", err)
	}
	for _, name := range []string{lock.Zlib, lock.PCRE2, lock.OpenSSL, lock.Nginx} {
		if v := verified[name]; !v.Signed || !v.SignerVendored {
			t.Errorf("%s: %s; want signed by a vendored key", name, v)
		}
	}
	if n := len(r.keyserver.Requests()); n != asked {
		t.Errorf("the build asked the key server %d times", n-asked)
	}
	for _, req := range r.Upstream.Requests() {
		if strings.HasSuffix(req.Path, ".asc") && strings.Contains(req.Path, pcre.Fingerprint) {
			t.Errorf("a key was fetched from the mirror: %s", req.Path)
		}
	}
}

// A release signed by a key the lock does not pin is refused, naming that fingerprint and
// the command that adopts it, while the other components and images land: exit 3.
func TestUnattendedReplayWithAnUnpinnedSigner(t *testing.T) {
	r := newReplay(t)
	mallory := upstreamtest.NewKey(t, "Mallory")
	tb := r.Tarballs["openssl-3.5.4.tar.gz"]
	r.Upstream.SetFile("openssl-3.5.4.tar.gz.asc", mallory.SignAt(t, tb, upstreamtest.NewSignedAt))
	before, err := lock.Load(r.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := r.run(t)
	if code != exitPartial {
		t.Fatalf("exit %d, want %d (partial); stderr:\n%s\nstdout:\n%s", code, exitPartial, errs, out)
	}
	l, err := lock.Load(r.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, was := l.MustComponent(lock.OpenSSL), before.MustComponent(lock.OpenSSL); got.Version != was.Version || got.SHA256 != was.SHA256 {
		t.Errorf("openssl moved to %s although refused", got.Version)
	}
	for name, want := range map[string]string{lock.Nginx: "1.28.0", lock.PCRE2: "10.46", lock.Zlib: "1.3.2"} {
		if c := l.MustComponent(name); c.Version != want {
			t.Errorf("%s = %s, want %s (the refusal of openssl must not hold it back)", name, c.Version, want)
		}
	}
	fix := "go run ./ci lock trust openssl " + mallory.Fingerprint
	for _, want := range []string{"openssl 3.5.4: refused", mallory.Fingerprint, fix} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	body, _ := os.ReadFile(r.body)
	if !strings.Contains(string(body), "### Refused (not in this pull request)") || !strings.Contains(string(body), fix) {
		t.Errorf("PR body does not list the refusal and its fix:\n%s", body)
	}

	// What a person does after checking the new signer with upstream: the command the
	// refusal names. The next run then lets the release in.
	r.keyserver.Serve(mallory.Fingerprint, mallory.Armored)
	var tout, terr bytes.Buffer
	if code := run(context.Background(), []string{"lock", "--lock", r.LockFile, "--keyserver", r.keyserver.URL, "trust", lock.OpenSSL, mallory.Fingerprint}, &tout, &terr); code != 0 {
		t.Fatalf("lock trust: exit %d: %s", code, terr.String())
	}
	if _, err := os.Stat(filepath.Join(r.keysDir, mallory.Fingerprint+".asc")); err != nil {
		t.Errorf("lock trust did not vendor the key: %v", err)
	}
	if code, _, errs := r.run(t); code != 0 {
		t.Fatalf("after lock trust: exit %d; stderr:\n%s", code, errs)
	}
	if l, _ := lock.Load(r.LockFile); l.MustComponent(lock.OpenSSL).Version != "3.5.4" {
		t.Errorf("openssl = %s after lock trust, want 3.5.4", l.MustComponent(lock.OpenSSL).Version)
	}
}

func TestLockTrustRefusals(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	ks := upstreamtest.NewKeyserver(t)
	impostor := upstreamtest.NewKey(t, "Impostor")
	wanted := upstreamtest.NewKey(t, "Wanted")
	ks.Serve(wanted.Fingerprint, impostor.Armored)
	before := s.LockBytes(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trust", lock.OpenSSL, "C14AC37739CAE924"}, 2, "not a key fingerprint"},
		{[]string{"trust", "libressl", wanted.Fingerprint}, 2, "has no component \"libressl\""},
		{[]string{"trust", lock.OpenSSL, wanted.Fingerprint}, 1, "refusing key material: asked for fingerprint " + wanted.Fingerprint},
		{[]string{"trust", lock.OpenSSL}, 2, "want: lock trust COMPONENT FINGERPRINT"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"lock", "--lock", s.LockFile, "--keyserver", ks.URL}, tc.args...), &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("lock %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
	if !bytes.Equal(before, s.LockBytes(t)) {
		t.Error("a refused lock trust changed the lock")
	}
	if _, err := os.Stat(lock.KeysDirBeside(s.LockFile)); !os.IsNotExist(err) {
		t.Errorf("a refused lock trust wrote keys (stat: %v)", err)
	}
}

// Key checks fail closed: a key server that answers for PCRE2's pinned fingerprint with
// another key, or with the right key under a broken self-signature, gets PCRE2 refused and
// nothing vendored; the rest still lands.
func TestUnattendedReplayRefusesBadKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, r *replay) []byte
		want  string
	}{
		{"another key", func(t *testing.T, r *replay) []byte {
			return upstreamtest.NewKey(t, "Impostor").Armored
		}, "refusing key material: asked for fingerprint"},
		{"broken self-signature", func(t *testing.T, r *replay) []byte {
			return brokenSelfSignature(t, r.Keys[lock.PCRE2])
		}, "no usable key for pinned fingerprint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReplay(t)
			pcre := r.Keys[lock.PCRE2].Fingerprint
			r.keyserver.Serve(pcre, tc.serve(t, r))
			keysBefore := r.keyFiles(t)
			code, _, errs := r.run(t)
			if code != exitPartial {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitPartial, errs)
			}
			for _, want := range []string{"pcre2 10.46: refused", pcre, tc.want} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			if got := r.keyFiles(t); !slices.Equal(got, keysBefore) {
				t.Errorf("key files %v, want %v (nothing vendored)", got, keysBefore)
			}
			l, err := lock.Load(r.LockFile)
			if err != nil {
				t.Fatal(err)
			}
			if v := l.MustComponent(lock.PCRE2).Version; v != "10.44" {
				t.Errorf("pcre2 moved to %s", v)
			}
			if v := l.MustComponent(lock.Nginx).Version; v != "1.28.0" {
				t.Errorf("nginx = %s; the other components must still land", v)
			}
		})
	}
}

// brokenSelfSignature is k's public key with its user ID replaced after signing: the
// self-signature no longer covers the identity the key shows.
func brokenSelfSignature(t *testing.T, k *upstreamtest.Key) []byte {
	t.Helper()
	e := *k.Entity
	e.Identities = map[string]*openpgp.Identity{}
	for name, id := range k.Entity.Identities {
		forged := *id
		forged.UserId = packet.NewUserId("pcre2 Release Manager", "", "security@example.test")
		e.Identities[name] = &forged
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, "PGP PUBLIC KEY BLOCK", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

func readArmoredKeys(b []byte) ([]string, error) {
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range el {
		out = append(out, fmt.Sprintf("%X", e.PrimaryKey.Fingerprint))
	}
	return out, nil
}

// An upstream that accepts connections and never answers fails the run at its one deadline,
// naming the host and the deadline, however many components there are (lookups run in
// parallel). The default deadline is --timeout's; this test shortens it.
func TestCheckUpdatesBlackHoleFailsAtTheDeadline(t *testing.T) {
	notInActions(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	hole := "http://" + ln.Addr().String()
	s := upstreamtest.NewDefaultLockScenario(t)
	start := time.Now()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"check-updates", "--lock", s.LockFile, "--github-api", hole, "--nginx-org", hole,
		"--skip-images", "--cache", t.TempDir(), "--timeout", "3s"}, &out, &errb)
	took := time.Since(start)
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, errb.String())
	}
	// Four components, each with retries: sequential lookups would take several deadlines.
	if took > 20*time.Second {
		t.Errorf("took %s with a 3s deadline", took)
	}
	// One line for the server (issue 40), its kind and the way out.
	if l := linesNaming(errb.String(), ln.Addr().String()+": timeout ("); len(l) != 1 || !strings.Contains(l[0], ", transient: failed for zlib, pcre2, openssl, nginx") {
		t.Errorf("want one line naming the timeout at %s and the four lookups:\n%s", ln.Addr(), errb.String())
	}
	for _, want := range []string{ln.Addr().String(), "3s deadline", "--timeout"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	t.Logf("failed after %s:\n%s", took.Round(time.Millisecond), errb.String())
}
