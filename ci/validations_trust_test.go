package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// Issue 35: lock trust takes its flags after the arguments too; trusting a key the component
// already trusts says so (not "now trusts") and changes nothing; a key built into the
// program is not written beside the lock, and no message names a file that was not written.
func TestLockTrustFlagsAfterArgumentsAndRetrust(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	ks := upstreamtest.NewKeyserver(t)
	signer := upstreamtest.NewKey(t, "New Signer")
	ks.Serve(signer.Fingerprint, signer.Armored)
	keyFile := filepath.Join(lock.KeysDirBeside(s.LockFile), signer.Fingerprint+".asc")
	trust := func(fpr string, extra ...string) (int, string, string) {
		return runWithin(t, 10*time.Second, append([]string{"lock", "trust", lock.OpenSSL, fpr, "--lock", s.LockFile, "--keyserver", ks.URL}, extra...)...)
	}

	code, out, errs := trust(signer.Fingerprint)
	if code != 0 || !strings.Contains(out, "openssl now trusts "+signer.Fingerprint) || !strings.Contains(out, keyFile+": the key, written") {
		t.Fatalf("flags after the arguments: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if _, err := os.Stat(keyFile); err != nil {
		t.Errorf("the key was not vendored: %v", err)
	}
	before := s.LockBytes(t)
	key, _ := os.ReadFile(keyFile)

	code, out, errs = trust(signer.Fingerprint)
	if code != 0 || !strings.Contains(out, "openssl already trusts "+signer.Fingerprint) || !strings.Contains(out, "nothing was changed") || strings.Contains(out, "now trusts") {
		t.Errorf("trusting again: exit %d, want it to say it already trusts and changed nothing\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if after, _ := os.ReadFile(keyFile); !bytes.Equal(before, s.LockBytes(t)) || !bytes.Equal(key, after) {
		t.Error("trusting again changed the lock or the key file")
	}

	// A key built into the program: nothing written beside the lock, and no message says so.
	embedded := lock.VendoredFingerprints()[0]
	notWritten := filepath.Join(lock.KeysDirBeside(s.LockFile), embedded+".asc")
	for i, want := range []string{"openssl now trusts " + embedded, "openssl already trusts " + embedded} {
		code, out, errs = trust(embedded)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "vendored already ("+lock.KeysDir+"/"+embedded+".asc): no key file written") || strings.Contains(out, notWritten) {
			t.Errorf("embedded key, run %d: exit %d, want %q and no mention of %s\nstdout: %s\nstderr: %s", i+1, code, want, notWritten, out, errs)
		}
	}
	if _, err := os.Stat(notWritten); !os.IsNotExist(err) {
		t.Errorf("the embedded key was written beside the lock (stat: %v)", err)
	}

	// A flag after the arguments that does not exist is a usage error naming it.
	code, _, errs = trust(signer.Fingerprint, "--nope")
	if code != 2 || !strings.Contains(errs, "-nope") {
		t.Errorf("an unknown flag after the arguments: exit %d\n%s", code, errs)
	}
}
