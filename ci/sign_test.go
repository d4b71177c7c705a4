package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --sign-key signs what --push publishes: alone it is a usage error.
func TestSignKeyNeedsPush(t *testing.T) {
	err := runBuild(context.Background(), buildFlags{engine: "host", platform: mustPlatforms("linux/amd64"), signKey: "key.pem"}, io.Discard, io.Discard)
	if err == nil || !isUsage(err) || !strings.Contains(err.Error(), "--sign-key key.pem signs what --push publishes") {
		t.Fatalf("err = %v, want a usage error asking for --push", err)
	}
}

// A key that cannot sign is refused before anything else can fail or start (here: before
// the missing Dagger engine is even looked for), naming the flag and the file.
func TestBadSignKeyFailsBeforeTheBuild(t *testing.T) {
	key := encryptedKeyWithoutEngine(t)
	err := runBuild(context.Background(), buildFlags{engine: "dagger", lockFile: testLockPath, platform: mustPlatforms("linux/amd64"),
		mirror: "http://127.0.0.1:9/never-contacted", image: "127.0.0.1:5000/nginx-forge/nginx:test", push: true, signKey: key}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--sign-key "+key+" is an encrypted key (cosign's encrypted key format, or encrypted PKCS#8) and COSIGN_PASSWORD is not set") {
		t.Fatalf("err = %v, want the key refused before the engine is looked for", err)
	}
}

// encryptedKeyWithoutEngine writes a cosign-encrypted key, which the signer refuses without
// COSIGN_PASSWORD (unset here), and leaves no Dagger engine to find: a key checked after the
// engine would fail on the engine.
func encryptedKeyWithoutEngine(t *testing.T) string {
	for _, v := range []string{"COSIGN_PASSWORD", "DAGGER_SESSION_PORT", "_EXPERIMENTAL_DAGGER_RUNNER_HOST", "_EXPERIMENTAL_DAGGER_CLI_BIN", "DAGGER_SESSION_TOKEN"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("PATH", t.TempDir())
	key := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(key, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key
}

// --sign-key as the README types it, through run (main's own parsing, not runBuild): the flag
// exists, and its value reaches both the usage check and the signer. The signing tests above
// call runBuild with the flags struct filled in, so they passed while the flag was missing.
func TestSignKeyOnTheCommandLine(t *testing.T) {
	key := encryptedKeyWithoutEngine(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--sign-key", "key.pem"}, "--sign-key key.pem signs what --push publishes: add --push"},
		{[]string{"build", "--engine", "dagger", "--lock", testLockPath, "--mirror", "http://127.0.0.1:9/never-contacted",
			"--push", "--image", "127.0.0.1:5000/nginx-forge/nginx:test", "--sign-key", key}, "--sign-key " + key + " is an encrypted key (cosign's encrypted key format, or encrypted PKCS#8) and COSIGN_PASSWORD is not set"},
	} {
		var stderr strings.Builder
		code := run(context.Background(), tc.args, io.Discard, &stderr)
		if code == 0 || strings.Contains(stderr.String(), "not defined") || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("ci %s: exit %d, stderr:\n%s\nwant an error containing %q", strings.Join(tc.args, " "), code, stderr.String(), tc.want)
		}
	}
}
