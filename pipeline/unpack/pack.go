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
func Pack(ctx context.Context, dir, top string, w io.Writer) error {
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
		name := top
		if rel != "." {
			name = top + "/" + filepath.ToSlash(rel)
		}
		return packEntry(tw, p, name)
	})
	if err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func packEntry(tw *tar.Writer, p, name string) error {
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
