package lock

import (
	"embed"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Vendored signer keys: the public keys of the upstream release signers, one armored file per
// primary-key fingerprint, pipeline/lock/keys/<FINGERPRINT>.asc. They are taken from the
// debian/upstream/signing-key.asc of Debian's source packages (which file each came from is
// in the commit that added it) and reviewed like any other change to the lock: a key here is
// trusted exactly as much as a fingerprint in a lock, because the fingerprint is the hash of
// the key and the file name is checked against it (keys_test.go). The verification code uses
// a vendored key before any cache, mirror or key server, and never fetches one.
//
//go:embed keys/*.asc
var keyFiles embed.FS

// KeysDir is where vendored keys live in a checkout. To trust a new signer, add its key there
// as <FINGERPRINT>.asc (40 upper-case hex digits) in a reviewed change.
const KeysDir = "pipeline/lock/keys"

// VendoredKey returns the armored public key vendored for the primary-key fingerprint fpr
// (40 upper-case hex digits), or false when none is.
func VendoredKey(fpr string) ([]byte, bool) {
	if !fingerprintRE.MatchString(fpr) {
		return nil, false
	}
	b, err := keyFiles.ReadFile(path.Join("keys", fpr+".asc"))
	if err != nil {
		return nil, false
	}
	return b, true
}

// VendoredFingerprints lists the fingerprints of the vendored keys (the file names without
// .asc), sorted. A file whose name is not a fingerprint is listed as it is, so that the test
// of the key files reports it.
func VendoredFingerprints() []string {
	ents, err := fs.ReadDir(keyFiles, "keys")
	if err != nil {
		// The embed pattern guarantees the directory; without it the program cannot build.
		panic("vendored keys: " + err.Error())
	}
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".asc"))
	}
	sort.Strings(out)
	return out
}

// IsFingerprint reports whether s is a primary-key fingerprint as the lock writes them: 40
// upper-case hex digits.
func IsFingerprint(s string) bool { return fingerprintRE.MatchString(s) }

// KeysDirBeside is the keys directory that belongs to the lock file lockFile: "keys" next to
// it (for the default lock, pipeline/lock/keys itself). An update writes a newly vendored
// signer's key there, and a build of that lock trusts the keys there like the embedded ones.
func KeysDirBeside(lockFile string) string { return filepath.Join(filepath.Dir(lockFile), "keys") }
