package lock

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// checkKeyFile is the rule for a vendored key file: its name is <FINGERPRINT>.asc, it holds
// exactly one armored public key, no secret key, and that key's primary fingerprint is the
// one in the name.
func checkKeyFile(name string, b []byte) error {
	fpr, ok := strings.CutSuffix(name, ".asc")
	if !ok || !fingerprintRE.MatchString(fpr) {
		return fmt.Errorf("%s: the name must be <FINGERPRINT>.asc, 40 upper-case hex digits", name)
	}
	// go-crypto reads only the first armored block of a file: a second one would be
	// embedded, unchecked, after it.
	if n := bytes.Count(b, []byte("-----BEGIN PGP")); n != 1 {
		return fmt.Errorf("%s holds %d armored blocks, want exactly one public key block", name, n)
	}
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: not an armored OpenPGP public key: %v", name, err)
	}
	if len(el) != 1 {
		return fmt.Errorf("%s holds %d keys, want exactly one (export the key by itself)", name, len(el))
	}
	if el[0].PrivateKey != nil {
		return fmt.Errorf("%s holds a secret key", name)
	}
	if got := fmt.Sprintf("%X", el[0].PrimaryKey.Fingerprint); got != fpr {
		return fmt.Errorf("%s holds the key %s: the file name must be its fingerprint", name, got)
	}
	return nil
}

// Every file in keys/ is a key whose fingerprint is its name, and the embedded set is exactly
// the files on disk.
func TestVendoredKeys(t *testing.T) {
	ents, err := os.ReadDir("keys")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range ents {
		if e.Name() == "README.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("keys", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkKeyFile(e.Name(), b); err != nil {
			t.Error(err)
			continue
		}
		fpr := strings.TrimSuffix(e.Name(), ".asc")
		onDisk = append(onDisk, fpr)
		if emb, ok := VendoredKey(fpr); !ok || !bytes.Equal(emb, b) {
			t.Errorf("VendoredKey(%s) = %d bytes, %v; want the file's %d bytes", fpr, len(emb), ok, len(b))
		}
	}
	if got := VendoredFingerprints(); !slices.Equal(got, onDisk) {
		t.Errorf("VendoredFingerprints() = %v, files on disk %v", got, onDisk)
	}
	// The signers of the releases this project builds and tests with: nginx 1.26.2 and
	// 1.26.3 (D6786CE3...), OpenSSL 3.5.7 (BA5473A2...).
	for _, fpr := range []string{"D6786CE303D9A9022998DC6CC8464D549AF75C0A", "BA5473A2B0587B07FB27CF2D216094DFD0CB81EF"} {
		if !slices.Contains(onDisk, fpr) {
			t.Errorf("%s is not vendored", fpr)
		}
	}
}

// A key file renamed to another fingerprint (or to anything else) is caught by the rule the
// test above applies.
func TestVendoredKeyRenamed(t *testing.T) {
	fprs := VendoredFingerprints()
	if len(fprs) < 2 {
		t.Fatalf("want at least two vendored keys, have %v", fprs)
	}
	b, _ := VendoredKey(fprs[0])
	for _, name := range []string{fprs[1] + ".asc", strings.ToLower(fprs[0]) + ".asc", fprs[0] + ".gpg"} {
		err := checkKeyFile(name, b)
		if err == nil {
			t.Errorf("key %s accepted under the name %s", fprs[0], name)
			continue
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name the file %s: %v", name, err)
		}
	}
	two := append(append([]byte{}, b...), mustKey(t, fprs[1])...)
	if err := checkKeyFile(fprs[0]+".asc", two); err == nil {
		t.Error("a file with two armored keys was accepted")
	}
	if _, ok := VendoredKey("../lock.go"); ok {
		t.Error("VendoredKey accepted a path")
	}
	if _, ok := VendoredKey(strings.Repeat("0", 40)); ok {
		t.Error("VendoredKey found a key that is not vendored")
	}
}

func mustKey(t *testing.T, fpr string) []byte {
	b, ok := VendoredKey(fpr)
	if !ok {
		t.Fatalf("%s not vendored", fpr)
	}
	return b
}
