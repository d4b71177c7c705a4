package image

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// variant assembles a synthetic image whose nginx.conf says which variant it is, so tests
// get distinct digests.
func variant(t testing.TB, which, arch string) v1.Image {
	t.Helper()
	tree := syntheticTree(t, time.Unix(1, 0), 0, false)
	if err := os.WriteFile(filepath.Join(tree, "etc/nginx/nginx.conf"), []byte("# variant "+which+"\nevents {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := Assemble(syntheticBase(t, arch), tree, testLock(t), WithBaseRef("gcr.io/distroless/base-nossl-debian13:nonroot"))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digestOf(t testing.TB, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// logs collects the notes WithProgress sends.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) Send(e progress.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, e.(progress.Note).Text)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestPublishRoundTripInProcess(t *testing.T) {
	reg := newInProcessRegistry(t)
	repo := reg.Host + "/nginx-forge"
	img := variant(t, "a", "amd64")
	l := testLock(t)
	sbom, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	var verified []string
	var lg logs
	res, err := Publish(context.Background(), img, repo, Tags(l, TagEvent{Latest: true}), quick(
		WithVerify(func(ctx context.Context, ref name.Digest) error {
			verified = append(verified, ref.String())
			// The smoke tests pull exactly this digest; no tag exists yet.
			if got := headDigest(t, repo+":latest"); !strings.HasPrefix(got, "absent") {
				t.Errorf("tag latest exists during verification: %s", got)
			}
			_, err := remote.Image(ref)
			return err
		}),
		WithSBOM(sbom, time.Unix(l.SourceDateEpoch, 0)),
		WithProgress(&lg),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	want := digestOf(t, img)
	if len(verified) != 1 || verified[0] != repo+"@"+want {
		t.Errorf("verified %v, want exactly %s@%s", verified, repo, want)
	}
	for _, tag := range []string{"1.26.3", "1.26.3-openssl3.5.7-pcre2-10.46-zlib1.3.1", "1.26", "stable", "latest"} {
		if got := headDigest(t, repo+":"+tag); got != want {
			t.Errorf("tag %s -> %s, want %s", tag, got, want)
		}
	}
	if res.AlreadyPresent || len(res.Tags) != 5 || res.SBOM == nil {
		t.Errorf("result %+v", res)
	}
	// The SBOM is found as a referrer of the image.
	refs, err := remote.Referrers(res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := refs.IndexManifest()
	if len(rm.Manifests) != 1 || rm.Manifests[0].ArtifactType != sbomArtifactType {
		t.Fatalf("referrers of %s: %+v", res.Digest, rm.Manifests)
	}
	art, err := remote.Image(res.Digest.Context().Digest(rm.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readSBOM(art); err != nil || string(got) != string(sbom) {
		t.Errorf("SBOM read back differs: %v", err)
	}
	// Pulled back, it is the same image.
	back, err := remote.Image(mustTag(t, repo+":1.26.3"))
	if err != nil {
		t.Fatal(err)
	}
	if d := digestOf(t, back); d != want {
		t.Errorf("pulled %s, pushed %s", d, want)
	}
	t.Logf("publish log:\n%s", lg.String())
}

func mustTag(t testing.TB, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// A digest the registry has is not uploaded again: the second publish only checks it and
// writes tags.
func TestPublishAlreadyPresent(t *testing.T) {
	reg := newInProcessRegistry(t)
	repo := reg.Host + "/nginx-forge"
	img := variant(t, "a", "amd64")
	if _, err := Publish(context.Background(), img, repo, []string{"1.26.3"}, quick()...); err != nil {
		t.Fatal(err)
	}
	reg.reset()
	var lg logs
	res, err := Publish(context.Background(), img, repo, []string{"1.26.3", "latest"}, quick(WithProgress(&lg))...)
	if err != nil {
		t.Fatal(err)
	}
	if !res.AlreadyPresent {
		t.Error("second publish did not notice the digest was present")
	}
	if !strings.Contains(lg.String(), "already present") {
		t.Errorf("log does not say already present:\n%s", lg.String())
	}
	for _, r := range reg.requests() {
		if strings.Contains(r, "/blobs/") {
			t.Errorf("second publish touched blobs: %s", r)
		}
		if strings.HasPrefix(r, "PUT ") && strings.Contains(r, "/manifests/sha256:") {
			t.Errorf("second publish re-put the manifest by digest: %s", r)
		}
	}
	if got := headDigest(t, repo+":latest"); got != digestOf(t, img) {
		t.Errorf("latest -> %s", got)
	}
}

// A failed verification moves no tag: the old tags still name the old image, and the
// error says what happened and what is left.
func TestPublishVerifyFailureMovesNoTag(t *testing.T) {
	reg := newInProcessRegistry(t)
	repo := reg.Host + "/nginx-forge"
	old, next := variant(t, "old", "amd64"), variant(t, "new", "amd64")
	tags := []string{"1.26.3", "latest"}
	if _, err := Publish(context.Background(), old, repo, tags, quick()...); err != nil {
		t.Fatal(err)
	}
	smoke := errors.New(`smoke check "nginx -t" failed: nginx: [emerg] unknown directive "bogus"`)
	_, err := Publish(context.Background(), next, repo, tags, quick(WithVerify(func(context.Context, name.Digest) error { return smoke }))...)
	var perr *PublishError
	if !errors.As(err, &perr) || perr.Step != StepVerify || !errors.Is(err, smoke) {
		t.Fatalf("got %v, want a verify-step PublishError wrapping the smoke failure", err)
	}
	for _, want := range []string{`step "verify"`, "nginx -t", "pushed " + repo + "@" + digestOf(t, next) + " untagged", "no tag moved"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for _, tag := range tags {
		if got := headDigest(t, repo+":"+tag); got != digestOf(t, old) {
			t.Errorf("tag %s moved to %s after a failed verification", tag, got)
		}
	}
}

func TestPublishRejectsBadInput(t *testing.T) {
	img := variant(t, "a", "amd64")
	for _, tc := range []struct{ repo, tag, want string }{
		{"UPPER/case", "x", "parsing repository"},
		{"127.0.0.1:1/r", "bad tag!", `tag "bad tag!"`},
	} {
		_, err := Publish(context.Background(), img, tc.repo, []string{tc.tag}, quick()...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing pushed") {
			t.Errorf("Publish(%q, %q) = %v, want error with %q and 'nothing pushed'", tc.repo, tc.tag, err, tc.want)
		}
	}
}

// Credentials reach the registry but never the log or the error.
func TestPublishNeverPrintsCredentials(t *testing.T) {
	const user, secret = "robot", "s3cr3t-t0ken-value"
	reg := registry.New(registry.Logger(nopLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != secret {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/nginx-forge"
	img := variant(t, "a", "amd64")
	keys := func(pass string) authn.Keychain {
		return staticKeychain{authn.FromConfig(authn.AuthConfig{Username: user, Password: pass})}
	}
	var lg logs
	if _, err := Publish(context.Background(), img, repo, []string{"t"}, quick(WithKeychain(keys(secret)), WithProgress(&lg))...); err != nil {
		t.Fatalf("publish with the right credentials: %v", err)
	}
	wrong := secret + "-wrong"
	_, err := Publish(context.Background(), variant(t, "b", "amd64"), repo, []string{"t"}, quick(WithKeychain(keys(wrong)), WithProgress(&lg))...)
	if err == nil {
		t.Fatal("publish with wrong credentials succeeded")
	}
	for _, s := range []string{secret, wrong} {
		if strings.Contains(err.Error(), s) || strings.Contains(lg.String(), s) {
			t.Errorf("a credential leaked:\nerror: %v\nlog: %s", err, lg.String())
		}
	}
}

type staticKeychain struct{ a authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.a, nil }

// PullBase resolves a multi-platform base to the asked platform and refuses a
// single-platform base of another one.
func TestPullBase(t *testing.T) {
	reg := newInProcessRegistry(t)
	repo := reg.Host + "/distroless/base"
	var refs []string
	for _, arch := range []string{"amd64", "arm64"} {
		res, err := Publish(context.Background(), syntheticBase(t, arch), repo, nil, quick()...)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, res.Digest.String())
	}
	idx, err := Index(context.Background(), repo, refs, []string{"nonroot"}, quick()...)
	if err != nil {
		t.Fatal(err)
	}
	img, err := PullBase(context.Background(), idx.Digest.String(), v1.Platform{OS: "linux", Architecture: "arm64"}, quick()...)
	if err != nil {
		t.Fatal(err)
	}
	if d := digestOf(t, img); d != strings.TrimPrefix(refs[1], repo+"@") {
		t.Errorf("arm64 base resolved to %s, want %s", d, refs[1])
	}
	if _, err := PullBase(context.Background(), refs[0], v1.Platform{OS: "linux", Architecture: "arm64"}, quick()...); err == nil || !strings.Contains(err.Error(), "want linux/arm64") {
		t.Errorf("amd64 image as arm64 base: %v", err)
	}
}
