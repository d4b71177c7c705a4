package upstream_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// check-updates refuses a new release in four cases (issue 12, point 2), each with a message
// that says what is wrong and what to do, and leaves the lock byte for byte as it was.
func TestUpdateRefusesNewRelease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		break_   func(t *testing.T, s *upstreamtest.Scenario, u *upstream.Updater)
		wantErrs []string
	}{
		{"signature older than the locked release's", func(t *testing.T, s *upstreamtest.Scenario, u *upstream.Updater) {
			s.Upstream.SetFile(upstreamtest.SignatureName, s.Pinned.SignAt(t, s.Tarball, upstreamtest.LockedSignedAt.Add(-5*time.Minute)))
		}, []string{"refused", "before the locked 3.5.7's"}},
		{"top directory does not match the version", func(t *testing.T, s *upstreamtest.Scenario, u *upstream.Updater) {
			// A correctly signed tarball of the old tree under the new name.
			old := upstreamtest.Tarball(t, "openssl-3.5.7", map[string]string{"README.md": "old\n"})
			s.Upstream.SetFile(upstreamtest.TarballName, old)
			s.Upstream.SetFile(upstreamtest.SignatureName, s.Pinned.SignAt(t, old, upstreamtest.NewSignedAt))
		}, []string{"refused", "unpacks into openssl-3.5.7/, not openssl-3.5.8/"}},
		{"two top directories", func(t *testing.T, s *upstreamtest.Scenario, u *upstream.Updater) {
			tb := upstreamtest.Tarball(t, "openssl-3.5.8", map[string]string{"README.md": "x\n", "../evil/x": "y\n"})
			s.Upstream.SetFile(upstreamtest.TarballName, tb)
			s.Upstream.SetFile(upstreamtest.SignatureName, s.Pinned.SignAt(t, tb, upstreamtest.NewSignedAt))
		}, []string{"refused", `archive openssl-3.5.8.tar.gz from`, `entry "openssl-3.5.8/../evil/x": a ".." segment in the name`, "nothing from it was used or cached", "ask upstream"}},
		{"signature cannot be verified", func(t *testing.T, s *upstreamtest.Scenario, u *upstream.Updater) {
			s.Tamper()
		}, []string{"refused: the new release cannot be verified", "does not verify"}},
		{"locked release cannot be verified", func(t *testing.T, s *upstreamtest.Scenario, u *upstream.Updater) {
			s.Upstream.SetFile("openssl-3.5.7.tar.gz", []byte("not the locked tarball"))
		}, []string{"refused: the locked release 3.5.7 must be verified to learn when it was signed", "checksum mismatch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := upstreamtest.NewScenario(t)
			f, _ := fetcher(t, s)
			u := updater(s, f)
			tc.break_(t, s, u)
			wants := append(tc.wantErrs, "openssl 3.5.8")
			expectRefusal(t, u, s.LockFile, check(t, s), wants...)
		})
	}
}

// expectRefusal runs the update of lockFile by rep and wants it refused with every one of
// wants in the refusal (its reason or its fix), the refused entries byte-identical in the
// lock, and nothing refused among what was applied.
func expectRefusal(t *testing.T, u *upstream.Updater, lockFile string, rep *upstream.Report, wants ...string) []upstream.Refusal {
	t.Helper()
	before, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := u.UpdateFile(context.Background(), lockFile, rep)
	var re *upstream.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("UpdateFile = %v (applied %+v); want a *RefusedError", err, applied)
	}
	text := err.Error()
	for _, r := range re.Refused {
		text += "\nfix: " + r.Fix
	}
	t.Logf("refused: %s", text)
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("the refusal does not say %q: %s", want, text)
		}
	}
	after, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range re.Refused {
		for _, a := range applied {
			if a.Name == r.Name {
				t.Errorf("%s was both refused and applied", r.Name)
			}
		}
		if c, ok := before.Component(r.Name); ok && !reflect.DeepEqual(c, after.MustComponent(r.Name)) {
			t.Errorf("the refused %s changed in the lock: %+v -> %+v", r.Name, c, after.MustComponent(r.Name))
		}
		if r.Name == "runtime image" && before.Images.Runtime != after.Images.Runtime ||
			r.Name == "builder image" && before.Images.Builder != after.Images.Builder {
			t.Errorf("the refused %s changed in the lock", r.Name)
		}
	}
	return re.Refused
}

// What a verified update reports: the signer (vendored), both signature dates, the top
// directory, and for each image the index's platforms.
func TestUpdateReportsWhatWasVerified(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	f, _ := fetcher(t, s)
	applied, err := updater(s, f).UpdateFile(context.Background(), s.LockFile, check(t, s))
	if err != nil {
		t.Fatal(err)
	}
	o := applied[0]
	if o.Name != lock.OpenSSL || !o.Signed || !o.SignerVendored || o.TopDir != "openssl-3.5.8" ||
		!o.SignedAt.Equal(upstreamtest.NewSignedAt) || !o.LockedSignedAt.Equal(upstreamtest.LockedSignedAt) ||
		o.SignatureURL != "https://github.com/openssl/openssl/releases/download/openssl-3.5.8/openssl-3.5.8.tar.gz.asc" {
		t.Errorf("openssl applied = %+v", o)
	}
	for _, im := range applied[1:] {
		if !im.IsImage() || strings.Join(im.Platforms, ",") != "linux/amd64,linux/arm64/v8" {
			t.Errorf("image applied = %+v; want an index for linux/amd64 and linux/arm64/v8", im)
		}
	}
	body := upstream.PRBody(applied, nil, nil)
	for _, want := range []string{
		"### openssl 3.5.7 → 3.5.8",
		"| sha256 | `" + o.SHA256 + "`",
		"| signature file | https://github.com/openssl/openssl/releases/download/openssl-3.5.8/openssl-3.5.8.tar.gz.asc |",
		"| signer | `" + s.Pinned.Fingerprint + "`, vendored (`pipeline/lock/keys/" + s.Pinned.Fingerprint + ".asc`) |",
		"| signature date | " + upstreamtest.NewSignedAt.UTC().Format(time.RFC3339) + " (not older than the locked 3.5.7's, " + upstreamtest.LockedSignedAt.UTC().Format(time.RFC3339) + ") |",
		"| top directory | `openssl-3.5.8/` (matches the version) |",
		"| builder image | `docker.io/library/ubuntu:24.04` | `(none pinned)` → `" + s.BuilderDigest + "` | linux/amd64, linux/arm64/v8 |",
		"| runtime image | `gcr.io/distroless/base-nossl-debian13:nonroot` | `(none pinned)` → `" + s.RuntimeDigest + "` |",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("PR body lacks %q:\n%s", want, body)
		}
	}
}

// A component the lock marks unsigned gains a signature when upstream publishes one for the
// new release: verified by a vendored key, pinned, and the "unsigned" reason removed (the
// lock refuses both). Without a published signature it stays unsigned, reason kept (one that
// names no version: see TestUpdateRefusesUnsignedReasonOfTheLockedVersion).
func TestUpdateUnsignedComponentGainsSignature(t *testing.T) {
	for _, publish := range []bool{true, false} {
		t.Run(map[bool]string{true: "published", false: "none upstream"}[publish], func(t *testing.T) {
			s := upstreamtest.NewScenario(t)
			setUnsigned(t, s.LockFile, lock.Nginx, "the test mirror carries no signatures of nginx releases")
			s.Upstream.SetGitHub("nginx/nginx", "tags", upstreamtest.TagsJSON("nginx/nginx", "release-1.29.3", "release-1.28.1", "release-1.26.4", "release-1.26.3"))
			tb := upstreamtest.Tarball(t, "nginx-1.26.4", map[string]string{"README": "nginx 1.26.4\n"})
			s.Upstream.SetFile("nginx-1.26.4.tar.gz", tb)
			if publish {
				s.Upstream.SetFile("nginx-1.26.4.tar.gz.asc", s.Pinned.SignAt(t, tb, upstreamtest.NewSignedAt))
			}
			f, _ := fetcher(t, s)
			applied, err := updater(s, f).UpdateFile(context.Background(), s.LockFile, check(t, s))
			if err != nil {
				t.Fatal(err)
			}
			l, err := lock.Load(s.LockFile)
			if err != nil {
				t.Fatal(err)
			}
			n := l.MustComponent(lock.Nginx)
			var a upstream.Applied
			for _, x := range applied {
				if x.Name == lock.Nginx {
					a = x
				}
			}
			if n.Version != "1.26.4" || n.SHA256 != upstreamtest.SHA256(tb) || a.TopDir != "nginx-1.26.4" {
				t.Fatalf("nginx in the lock = %+v, applied %+v", n, a)
			}
			if publish {
				if n.Unsigned != "" || n.Signature == nil || n.Signature.URL != "https://nginx.org/download/nginx-1.26.4.tar.gz.asc" ||
					strings.Join(n.Signature.Fingerprints, ",") != s.Pinned.Fingerprint || !a.GainedSignature || !a.Signed {
					t.Errorf("nginx = %+v (signature %+v), applied %+v; want the signature pinned to %s and no unsigned reason", n, n.Signature, a, s.Pinned.Fingerprint)
				}
				if !strings.Contains(upstream.PRBody(applied, nil, nil), "the `unsigned` reason is removed") {
					t.Error("the PR body does not say the component gained a signature")
				}
			} else {
				if n.Signature != nil || n.Unsigned == "" || a.Signed || a.Unsigned != n.Unsigned {
					t.Errorf("nginx = %+v, applied %+v; want it still unsigned with its reason", n, a)
				}
				// The loopback mirror is plain HTTP: the body must not call it an HTTPS download.
				if !strings.Contains(upstream.PRBody(applied, nil, nil), "| signature | **none**: the checksum rests on the plain-HTTP download from "+strings.TrimPrefix(s.Upstream.URL, "http://")+
					" alone, which has no transport security (anyone on the path could have altered it); the lock says why: "+n.Unsigned) {
					t.Errorf("the PR body does not say nginx is unsigned and why:\n%s", upstream.PRBody(applied, nil, nil))
				}
			}
		})
	}
}

// check-updates --write refuses a moved base image tag whose index lacks a platform, and
// leaves the lock as it was.
func TestUpdateRefusesImageWithoutArm64(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	upstreamtest.PushIndex(t, s.Registry, "gcr.io/distroless/base-nossl-debian13:nonroot", "linux/amd64")
	f, _ := fetcher(t, s)
	refused := expectRefusal(t, updater(s, f), s.LockFile, check(t, s),
		"runtime image", "image gcr.io/distroless/base-nossl-debian13:nonroot", "has no linux/arm64 manifest", "wait for the image to be published for every platform")
	if len(refused) != 1 {
		t.Errorf("refused %v, want the runtime image alone", refused)
	}
}

// setUnsigned rewrites component name's "unsigned" reason in the lock file.
func setUnsigned(t *testing.T, file, name, reason string) {
	t.Helper()
	l, err := lock.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := l.MustComponent(name)
	c.Unsigned = reason
	l.SetComponent(c)
	if err := l.Write(file); err != nil {
		t.Fatal(err)
	}
}

// An "unsigned" reason stays in the lock for the new release, so one written about the locked
// release (naming its version) is not carried over to the next: the update is refused, before
// anything is downloaded, and the lock is unchanged.
func TestUpdateRefusesUnsignedReasonOfTheLockedVersion(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	s.Upstream.SetGitHub("nginx/nginx", "tags", upstreamtest.TagsJSON("nginx/nginx", "release-1.26.4", "release-1.26.3"))
	s.Upstream.SetFile("nginx-1.26.4.tar.gz", upstreamtest.Tarball(t, "nginx-1.26.4", map[string]string{"README": "nginx 1.26.4\n"}))
	// The test lock's reason: "... Debian trixie's current nginx source (1.26.3-3+deb13u11),
	// which does not carry nginx's nginx-1.26.3.tar.gz.asc ...".
	reason := func() string {
		l, err := lock.Load(s.LockFile)
		if err != nil {
			t.Fatal(err)
		}
		return l.MustComponent(lock.Nginx).Unsigned
	}()
	if !strings.Contains(reason, "1.26.3") {
		t.Fatalf("the test lock's nginx reason %q no longer names 1.26.3; pick another reason for this test", reason)
	}
	f, _ := fetcher(t, s)
	expectRefusal(t, updater(s, f), s.LockFile, check(t, s),
		"nginx 1.26.4: refused", "names the locked version 1.26.3", "rewrite the component's \"unsigned\" reason in the lock")
	for _, r := range s.Upstream.Requests() {
		if r.Method == "GET" && strings.HasSuffix(r.Path, "/nginx-1.26.4.tar.gz") {
			t.Errorf("the new tarball was downloaded before the refusal: %s %s", r.Method, r.Path)
		}
	}
}
