package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifestNamesTheChangedFile: a stored entry's manifest matches its output; appended
// bytes, a changed mode, a new file and a removed file are each named; an entry without a
// manifest says so (reuse then writes one).
func TestManifestNamesTheChangedFile(t *testing.T) {
	entry := t.TempDir()
	lib := filepath.Join(entry, "out", "usr", "lib", "libz.a")
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libz.a", filepath.Join(entry, "out", "usr", "lib", "libz.so")); err != nil {
		t.Fatal(err)
	}
	if err := checkManifest(entry); err != errNoManifest {
		t.Fatalf("an entry without a manifest: %v", err)
	}
	if err := writeManifest(entry); err != nil {
		t.Fatal(err)
	}
	if err := checkManifest(entry); err != nil {
		t.Fatalf("the entry as stored: %v", err)
	}
	change := func(what string, do func() error, want string) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatal(err)
		}
		err := checkManifest(entry)
		if want == "" && err != nil {
			t.Errorf("%s: %v, want it to match again", what, err)
		}
		if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", what, err, want)
		}
	}
	change("appended bytes", func() error {
		return os.WriteFile(lib, []byte("archive+"), 0o644)
	}, "usr/lib/libz.a differs from its manifest")
	change("restored", func() error { return os.WriteFile(lib, []byte("archive"), 0o644) }, "")
	change("mode", func() error { return os.Chmod(lib, 0o666) }, "usr/lib/libz.a differs from its manifest (mode -rw-rw-rw-")
	change("mode restored", func() error { return os.Chmod(lib, 0o644) }, "")
	change("new file", func() error {
		return os.WriteFile(filepath.Join(entry, "out", "usr", "lib", "zz.a"), nil, 0o644)
	}, "usr/lib/zz.a is in its output but not in its manifest")
	change("removed file", func() error {
		if err := os.Remove(filepath.Join(entry, "out", "usr", "lib", "zz.a")); err != nil {
			return err
		}
		return os.Remove(lib)
	}, "its output holds usr/lib/libz.so where its manifest lists usr/lib/libz.a")
}
