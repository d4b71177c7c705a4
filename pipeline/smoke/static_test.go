package smoke

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNoShell(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755)
	os.Symlink("usr/bin", filepath.Join(root, "bin")) // merged /usr
	r := &runner{t: NotStarted(root, errors.New("static")), o: Options{}}
	if st, d := checkNoShell(context.Background(), r); st != Pass {
		t.Fatalf("empty root: %s %s", st, d)
	}
	// A dangling link counts: the check is about what the image carries.
	os.Symlink("dash", filepath.Join(root, "usr", "bin", "sh"))
	st, d := checkNoShell(context.Background(), r)
	if st != Fail || !strings.Contains(d, "/bin/sh") || !strings.Contains(d, "/usr/bin/sh") {
		t.Fatalf("root with /usr/bin/sh: %s %q, want FAIL naming /bin/sh (via the /bin link) and /usr/bin/sh", st, d)
	}
}

func TestResolveInStaysInsideRoot(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "usr", "lib"), 0o755)
	os.WriteFile(filepath.Join(root, "usr", "lib", "f"), nil, 0o644)
	os.Symlink("/usr/lib", filepath.Join(root, "lib"))
	os.Symlink("../../../../../../etc", filepath.Join(root, "usr", "escape"))
	got, err := resolveIn(root, "/lib/f")
	if err != nil || got != filepath.Join(root, "usr", "lib", "f") {
		t.Errorf("resolveIn(/lib/f) = %q, %v", got, err)
	}
	// ../ beyond the root stays at the root (as in a chroot): /etc of the image, which
	// does not exist here, never the host's /etc.
	if got, err := resolveIn(root, "/usr/escape/passwd"); err == nil {
		t.Errorf("resolveIn(/usr/escape/passwd) = %q, want not found inside root", got)
	}
	os.Symlink("loop", filepath.Join(root, "loop"))
	if _, err := resolveIn(root, "/loop/x"); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("link loop: %v", err)
	}
	// ReadImageFile reads through the same resolution: the image's file, never the host's.
	os.WriteFile(filepath.Join(root, "usr", "lib", "f"), []byte("image"), 0o644)
	if data, err := ReadImageFile(root, "/lib/f"); err != nil || string(data) != "image" {
		t.Errorf("ReadImageFile(/lib/f) = %q, %v", data, err)
	}
	if data, err := ReadImageFile(root, "/usr/escape/passwd"); err == nil {
		t.Errorf("ReadImageFile(/usr/escape/passwd) read %d bytes outside root", len(data))
	}
}
