package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateSourceIsTheCheckedBytes: the stage's copy of a prepared archive is made only
// when the bytes copied hash to the archive's name; an archive whose bytes changed after the
// check is refused naming the file, and no copy is left for a stage to read.
func TestPrivateSourceIsTheCheckedBytes(t *testing.T) {
	dir := t.TempDir()
	body := []byte("the prepared archive")
	sum := sha256.Sum256(body)
	src := filepath.Join(dir, hex.EncodeToString(sum[:])+".tar.gz")
	if err := os.WriteFile(src, body, 0o444); err != nil {
		t.Fatal(err)
	}
	cp, err := PrivateSource(filepath.Join(dir, "stage1"), src)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(cp); err != nil || string(b) != string(body) || filepath.Dir(cp) != filepath.Join(dir, "stage1") {
		t.Errorf("copy %s: %q %v", cp, b, err)
	}
	// The same base name, mode and mtime: the Dagger engine keys a stage by content and mode.
	a, _ := os.Stat(src)
	c, err := os.Stat(cp)
	if err != nil || filepath.Base(cp) != filepath.Base(src) || c.Mode() != a.Mode() || !c.ModTime().Equal(a.ModTime()) {
		t.Errorf("copy %s is not the archive's name, mode and mtime: %v %v (%v)", cp, c, a, err)
	}
	if d, err := os.Stat(filepath.Join(dir, "stage1")); err != nil || d.Mode().Perm() != 0o700 {
		t.Errorf("the copy's directory is not private: %v %v", d, err)
	}
	swapped := filepath.Join(dir, "swapped")
	if err := os.WriteFile(swapped, []byte("PWNED"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swapped, src); err != nil {
		t.Fatal(err)
	}
	_, err = PrivateSource(filepath.Join(dir, "stage2"), src)
	if err == nil || !strings.Contains(err.Error(), "source "+src+" changed after it was checked") {
		t.Errorf("a swapped archive: %v", err)
	}
}
