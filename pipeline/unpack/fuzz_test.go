package unpack

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzExtract feeds the extractor arbitrary bytes, seeded with every hostile case, a good
// gzip and xz archive, and the cases in testdata/fuzz/FuzzExtract (link targets with control
// characters, a git tree served with a mirror's own modes, times and empty directories). Whatever it gets, either it refuses and leaves nothing behind, or
// everything it wrote is a regular file, directory or symbolic link inside the tree, within
// the limits, and packs (with Pack and with PackGitTree) to an archive that unpacks under the
// same policy and packs to the same bytes again.
func FuzzExtract(f *testing.F) {
	for _, c := range hostileCases(f) {
		f.Add(c.archive)
	}
	good := tarOf(f, dirEnt("src-1.0/"), withMode(file("src-1.0/configure", "#!/bin/sh\n"), 0o755), file("src-1.0/a/b.c", "int b;\n"), symlink("src-1.0/a/c.c", "b.c"))
	f.Add(gz(f, good))
	f.Add(xzOf(f, good))
	lim := Limits{Entries: 1000, EntryBytes: 1 << 20, TotalBytes: 4 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		archive := filepath.Join(dir, "in.tar.gz")
		if err := os.WriteFile(archive, b, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "tree")
		res, err := Extract(context.Background(), archive, dst, lim)
		if err != nil {
			if _, serr := os.Lstat(dst); !errors.Is(serr, fs.ErrNotExist) {
				t.Fatalf("refused (%v) but %s is left", err, dst)
			}
			return
		}
		if res.Entries > lim.Entries || res.Bytes > lim.TotalBytes || res.Top == "" {
			t.Fatalf("result %+v beyond %+v", res, lim)
		}
		checkTree(t, dst)
		var p1, p2 bytes.Buffer
		if err := Pack(context.Background(), dst, res.Top, &p1); err != nil {
			t.Fatal(err)
		}
		again := filepath.Join(dir, "again")
		packed := filepath.Join(dir, "packed.tar.gz")
		os.WriteFile(packed, p1.Bytes(), 0o644)
		if _, err := Extract(context.Background(), packed, again, lim); err != nil {
			t.Fatalf("the packed archive is refused: %v", err)
		}
		if err := Pack(context.Background(), again, res.Top, &p2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p1.Bytes(), p2.Bytes()) {
			t.Fatal("the tree packed twice gives different bytes")
		}
		// As a git-pinned source is packed: the result passes the policy and packs to itself.
		var g1, g2 bytes.Buffer
		epoch := time.Unix(1765000000, 0)
		if err := PackGitTree(context.Background(), dst, res.Top, epoch, &g1); err != nil {
			t.Fatal(err)
		}
		gitPacked, gitAgain := filepath.Join(dir, "git.tar.gz"), filepath.Join(dir, "git-again")
		os.WriteFile(gitPacked, g1.Bytes(), 0o644)
		if _, err := Extract(context.Background(), gitPacked, gitAgain, lim); err != nil {
			t.Fatalf("the archive PackGitTree wrote is refused: %v", err)
		}
		if err := PackGitTree(context.Background(), gitAgain, res.Top, epoch, &g2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g1.Bytes(), g2.Bytes()) {
			t.Fatal("the tree packed twice as a git tree gives different bytes")
		}
	})
}

// checkTree walks what Extract wrote: only directories, regular files and symbolic links,
// no set-id or sticky bit, and no link that resolves outside the tree.
func checkTree(t *testing.T, dst string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(dst)
	filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Lstat(p)
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
			t.Fatalf("%s has mode %s", p, fi.Mode())
		}
		switch {
		case fi.IsDir(), fi.Mode().IsRegular():
		case fi.Mode()&fs.ModeSymlink != 0:
			if real, err := filepath.EvalSymlinks(p); err == nil && real != root && !strings.HasPrefix(real, root+"/") {
				t.Fatalf("%s resolves to %s, outside %s", p, real, root)
			}
		default:
			t.Fatalf("%s is a %s", p, fi.Mode().Type())
		}
		return nil
	})
}
