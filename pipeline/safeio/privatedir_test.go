package safeio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckPrivateDir: a cache of this user's own with mode 0755 (or not there yet, or under
// a sticky world-writable directory such as /tmp) passes; one writable by group or others,
// owned by another user, or under a directory anyone can rename it out of is refused naming
// the directory and the command that fixes it.
func TestCheckPrivateDir(t *testing.T) {
	root := t.TempDir()
	own := filepath.Join(root, "own")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{own, filepath.Join(own, "not", "yet"), filepath.Join(own, "..", "own")} {
		if err := CheckPrivateDir(ok); err != nil {
			t.Errorf("CheckPrivateDir(%s): %v", ok, err)
		}
	}
	sticky := filepath.Join(root, "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(filepath.Join(sticky, "cache")); err != nil {
		t.Errorf("a cache under a sticky directory: %v", err)
	}

	loose := filepath.Join(root, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(loose); err == nil || !strings.Contains(err.Error(), "writable by group or others (mode 0777)") || !strings.Contains(err.Error(), "chmod go-w "+loose) {
		t.Errorf("a world-writable cache: %v", err)
	}
	under := filepath.Join(loose, "cache")
	if err := os.Mkdir(under, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(under); err == nil || !strings.Contains(err.Error(), "directory "+loose+" above the cache directory") {
		t.Errorf("a cache in a world-writable directory: %v", err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(loose, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(link); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("a link to a world-writable cache: %v", err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(file); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a file as the cache: %v", err)
	}

	if os.Geteuid() != 0 {
		t.Log("not root: the foreign-owner case needs chown; skipped")
		return
	}
	foreign := filepath.Join(root, "foreign")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(foreign); err == nil || !strings.Contains(err.Error(), "owned by uid 65534, not by uid 0") || !strings.Contains(err.Error(), "chown -R 0 "+foreign) {
		t.Errorf("a cache owned by another user: %v", err)
	}
	if err := CheckPrivateDir(filepath.Join(foreign, "cache")); err == nil || !strings.Contains(err.Error(), "owned by uid 65534, neither root nor uid 0") {
		t.Errorf("a cache in another user's directory: %v", err)
	}
}
