package image

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Each source package's comment in the SBOM says what vouches for it: the pinned signers for
// a signed component, the lock's "unsigned" reason for one without a signature, and plainly
// that there is no reason when the lock gives none.
func TestSBOMSignatureComments(t *testing.T) {
	l := testLock(t)
	// The test lock has one component of each kind after this: openssl signed, nginx and
	// PCRE2 unsigned with a reason, zlib unsigned without one.
	zlib := l.MustComponent(lock.Zlib)
	zlib.Unsigned = ""
	l.SetComponent(zlib)
	img := assembleSynthetic(t, "amd64")
	doc, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	var parsed spdxDocument
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	comments := map[string]string{}
	for _, p := range parsed.Packages {
		comments[p.Name] = p.Comment
	}
	for _, name := range []string{lock.Nginx, lock.PCRE2} {
		c := l.MustComponent(name)
		if c.Unsigned == "" || c.Signature != nil {
			t.Fatalf("test lock: %s should be unsigned with a reason", name)
		}
		if want := "NO PGP signature (unsigned: " + c.Unsigned + ")"; !strings.Contains(comments[name], want) {
			t.Errorf("%s comment %q does not carry the lock's reason %q", name, comments[name], want)
		}
	}
	o := l.MustComponent(lock.OpenSSL)
	if got := comments[lock.OpenSSL]; !strings.Contains(got, o.Signature.URL) || !strings.Contains(got, o.Signature.Fingerprints[0]) || strings.Contains(got, "NO PGP") {
		t.Errorf("openssl comment %q does not name its signature and signers", got)
	}
	if got := comments[lock.Zlib]; !strings.Contains(got, "NO PGP signature, and the lock gives no reason") {
		t.Errorf("zlib comment %q does not say it is unsigned without a reason", got)
	}
}
