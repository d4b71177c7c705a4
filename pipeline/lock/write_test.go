package lock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteKeyFileNeverWritesThroughALink: a link in the key file's place (dangling or
// not) and a keys directory that is a link are refused, and nothing appears where they
// point; a name that is no fingerprint is refused.
func TestWriteKeyFileNeverWritesThroughALink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	fpr := "BA5473A2B0587B07FB27CF2D216094DFD0CB81EF"
	dangling := filepath.Join(dir, fpr+".asc")
	if err := os.Symlink(filepath.Join(outside, "x.asc"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteKeyFile(dir, fpr, []byte("key")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a dangling link as the key file: err = %v, want it refused as a symbolic link", err)
	}
	linkedDir := filepath.Join(t.TempDir(), "keys")
	if err := os.Symlink(outside, linkedDir); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteKeyFile(linkedDir, fpr, []byte("key")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a linked keys directory: err = %v, want it refused as a symbolic link", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside: %v", ents)
	}
	if _, err := WriteKeyFile(dir, "../../etc/passwd", []byte("key")); err == nil {
		t.Error("a key file name that is no fingerprint was written")
	}
}
