package safeio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReplaceFileNeverWritesThroughALink: a link in the file's place (dangling or not) is
// refused and nothing appears where it points; a file keeps its mode, and a new one is 0644
// whatever the umask.
func TestReplaceFileNeverWritesThroughALink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	dangling := filepath.Join(dir, "file")
	if err := os.Symlink(filepath.Join(outside, "x"), dangling); err != nil {
		t.Fatal(err)
	}
	var le *linkError
	if err := ReplaceFile(dangling, []byte("new"), 0o644); !errors.As(err, &le) {
		t.Errorf("a dangling link as the file: err = %v, want a *linkError", err)
	}
	linkedDir := filepath.Join(t.TempDir(), "keys")
	if err := os.Symlink(outside, linkedDir); err != nil {
		t.Fatal(err)
	}
	if err := CheckOutputDir(linkedDir); !errors.As(err, &le) {
		t.Errorf("a linked directory: err = %v, want a *linkError", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside: %v", ents)
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
