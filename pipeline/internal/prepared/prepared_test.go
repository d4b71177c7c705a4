package prepared

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: an archive under the name Path gives it passes; the same bytes under another
// name, and a file whose bytes changed after it was written, are refused with what to do.
func TestCheck(t *testing.T) {
	cache := t.TempDir()
	body := []byte("the files of a verified source, packed")
	sum := sha256.Sum256(body)
	good := Path(cache, sum[:])
	if filepath.Dir(good) != filepath.Join(cache, dir) {
		t.Fatalf("Path %s is not under %s/%s", good, cache, dir)
	}
	if err := os.MkdirAll(filepath.Dir(good), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, body, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := Check(good); err != nil {
		t.Errorf("Check(%s): %v", good, err)
	}

	downloaded := filepath.Join(cache, "nginx-1.26.3.tar.gz")
	if err := os.WriteFile(downloaded, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(downloaded); err == nil || !strings.Contains(err.Error(), "never a downloaded archive") {
		t.Errorf("Check of a file not named by its SHA-256: %v", err)
	}

	if err := os.Chmod(good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, append(body, '!'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(good); err == nil || !strings.Contains(err.Error(), "corrupt or tampered with") {
		t.Errorf("Check of a changed file: %v", err)
	}
	if err := Check(filepath.Join(cache, dir, strings.Repeat("0", 64)+".tar.gz")); err == nil || !strings.Contains(err.Error(), "reading source") {
		t.Errorf("Check of a missing file: %v", err)
	}
}
