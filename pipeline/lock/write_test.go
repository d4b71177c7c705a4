package lock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReplaceFileNeverWritesThroughALink: a link in the file's place (dangling or not) and a
// keys directory that is a link are refused, and nothing appears where they point; a file
// keeps its mode, and a new one is 0644 whatever the umask.
func TestReplaceFileNeverWritesThroughALink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	fpr := "BA5473A2B0587B07FB27CF2D216094DFD0CB81EF"
	dangling := filepath.Join(dir, fpr+".asc")
	if err := os.Symlink(filepath.Join(outside, "x.asc"), dangling); err != nil {
		t.Fatal(err)
	}
	var le *linkError
	if _, err := WriteKeyFile(dir, fpr, []byte("key")); !errors.As(err, &le) {
		t.Errorf("a dangling link as the key file: err = %v, want a *linkError", err)
	}
	linkedDir := filepath.Join(t.TempDir(), "keys")
	if err := os.Symlink(outside, linkedDir); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteKeyFile(linkedDir, fpr, []byte("key")); !errors.As(err, &le) {
		t.Errorf("a linked keys directory: err = %v, want a *linkError", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside: %v", ents)
	}
	if _, err := WriteKeyFile(dir, "../../etc/passwd", []byte("key")); err == nil {
		t.Error("a key file name that is no fingerprint was written")
	}

	file := filepath.Join(dir, "kept")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o664, 0o644, 0o600} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		if err := ReplaceFile(file, []byte("new"), 0o600); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(file); fi.Mode() != mode {
			t.Errorf("mode %v became %v", mode, fi.Mode())
		}
	}
	fresh := filepath.Join(dir, "fresh")
	if err := ReplaceFile(fresh, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode() != 0o644 {
		t.Errorf("a new file is %v, want 0644", fi.Mode())
	}
}
