package unpack

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Pack writes the tree at dir (as Extract left it) as a gzip-compressed tar archive under the
// top directory top: every directory, regular file and symbolic link, in lexical order, with
// its mode and modification time (whole seconds), owned by 0:0 with no user or group names.
// The same tree gives the same bytes, so a build engine that caches by content (Dagger) finds
// the same input each run. A stage unpacks it with tar; everything in it passed Extract's
// policy, so tar writes exactly the files that were hashed.
//
// Pack is for an archive verified by the SHA-256 of its bytes: that digest covers every byte
// upstream published, modes, times and empty directories included, so nothing Pack keeps is
// outside what was checked. An archive verified by its git tree is packed with PackGitTree.
func Pack(ctx context.Context, dir, top string, w io.Writer) error {
	return pack(ctx, dir, top, w, nil)
}

// PackGitTree is Pack for a tree verified by its git tree ID (pipeline/gittree), which covers
// the files' names, bytes and link targets and one bit of each file's mode, and nothing
// else: whoever served the archive chose the rest. So the rest is not taken from the archive
// but made from what was checked and from the lock, the way git itself writes a tree out:
//   - a file's mode is 0755 when its owner may execute it (git's 100755) and 0644 otherwise,
//     a directory's 0755 and a symbolic link's 0777 (what git archive writes);
//   - every modification time is epoch (the lock's source_date_epoch), not the archive's;
//   - a directory with no file or symbolic link anywhere below it is left out, since git's
//     tree has no entry for it.
//
// The prepared archive is then a function of the pinned tree and the epoch alone: two
// mirrors serving the same tree with different metadata give the same bytes, and no mode,
// time or empty directory of the mirror's choosing reaches a stage.
func PackGitTree(ctx context.Context, dir, top string, epoch time.Time, w io.Writer) error {
	keep, err := occupiedDirs(ctx, dir)
	if err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	return pack(ctx, dir, top, w, &gitMeta{epoch: epoch.Truncate(time.Second), keep: keep})
}

// gitMeta is what PackGitTree writes instead of the tree's own metadata.
type gitMeta struct {
	epoch time.Time
	keep  map[string]bool // directories (relative to the tree, "." the top) with a file or link below
}

func pack(ctx context.Context, dir, top string, w io.Writer, g *gitMeta) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // a signal or the run's deadline: checked between files
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if g != nil && d.IsDir() && rel != "." && !g.keep[rel] {
			return fs.SkipDir // nothing below it is in git's tree
		}
		name := top
		if rel != "." {
			name = top + "/" + filepath.ToSlash(rel)
		}
		return packEntry(tw, p, name, g)
	})
	if err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// occupiedDirs is the set of directories under dir that hold a file or symbolic link at any
// depth. Each file marks its ancestors up to the first one already marked, so the work is
// one step per entry and per directory, whatever the depth.
func occupiedDirs(ctx context.Context, dir string) (map[string]bool, error) {
	keep := map[string]bool{".": true}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		for a := filepath.Dir(rel); !keep[a]; a = filepath.Dir(a) {
			keep[a] = true
		}
		return nil
	})
	return keep, err
}

func packEntry(tw *tar.Writer, p, name string, g *gitMeta) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime().Truncate(time.Second)}
	switch {
	case fi.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case fi.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	case fi.Mode()&fs.ModeSymlink != 0:
		h.Typeflag = tar.TypeSymlink
		if h.Linkname, err = os.Readlink(p); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: not a regular file, directory or symbolic link", p)
	}
	if g != nil {
		h.Mode, h.ModTime = gitMode(h.Typeflag, fi.Mode()), g.epoch
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(tw, f)
	if err == nil && n != h.Size {
		err = fmt.Errorf("%s changed while it was packed", p)
	}
	return err
}

// gitMode is the mode git gives an entry: the owner's execute bit is the only bit of a file's
// mode its tree records (pipeline/gittree reads the same bit).
func gitMode(typ byte, m fs.FileMode) int64 {
	switch {
	case typ == tar.TypeDir:
		return 0o755
	case typ == tar.TypeSymlink:
		return 0o777
	case m&0o100 != 0:
		return 0o755
	}
	return 0o644
}
