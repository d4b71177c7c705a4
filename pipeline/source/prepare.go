package source

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nginx-forge/nginx-forge/pipeline/gittree"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/prepared"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// preparedArchive is a verified archive as the build stages read it.
type preparedArchive struct {
	path string // <cache>/prepared/<sha256 of the file>.tar.gz
	top  string // the archive's top directory
	tree string // the git tree of the files as unpacked
}

// prepare unpacks archive (the component's verified bytes, or bytes about to be verified by
// their tree) once, with pipeline/unpack's policy, into a fresh directory; checks a git
// source's pinned tree over the files as written; and writes them back (pack) as the
// archive the stages read. name is the file's name for messages (archive may be a
// temporary file). Nothing is left behind when it fails.
func (f *Fetcher) prepare(ctx context.Context, c lock.Component, archive, name, from string) (preparedArchive, error) {
	work, err := f.scratchDir(".unpack-*")
	if err != nil {
		return preparedArchive{}, err
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	res, err := unpack.Extract(ctx, archive, tree, unpack.DefaultLimits)
	if err != nil {
		var ue *unpack.Error
		if errors.As(err, &ue) {
			ue.Archive = name + " from " + safeio.RedactURL(from)
		}
		return preparedArchive{}, err
	}
	id, err := gittree.OfDir(ctx, tree)
	if err != nil {
		return preparedArchive{}, fmt.Errorf("hashing the files of %s: %w", name, err)
	}
	if g := c.Git; g != nil && id != g.Tree {
		return preparedArchive{}, &TreeError{File: name, From: safeio.RedactURL(from), Commit: g.Commit, Want: g.Tree, Got: id}
	}
	p, err := f.pack(ctx, tree, res.Top, work, c.Git != nil)
	if err != nil {
		return preparedArchive{}, fmt.Errorf("packing the verified files of %s: %w", name, err)
	}
	return preparedArchive{path: p, top: res.Top, tree: id}, nil
}

// pack writes tree as the stages' archive into the cache under its own digest. The same
// files give the same bytes, so a second build finds the identical file there and keeps it.
//
// What it keeps besides the files' names, bytes and link targets follows what verified them.
// A source checked by its SHA-256 keeps its archive's modes and times (unpack.Pack): the
// digest covers every byte upstream published, so there is nothing outside it, and its
// prepared archive stays the same bytes it always was. A source checked by its git tree
// (gitTree) gets only what the tree covers, with every time the lock's source_date_epoch
// (unpack.PackGitTree): modes, times and empty directories are the server's choice there,
// and would otherwise reach the stage unchecked.
func (f *Fetcher) pack(ctx context.Context, tree, top, work string, gitTree bool) (string, error) {
	tmp, err := os.CreateTemp(work, "packed-*")
	if err != nil {
		return "", local("creating a file in", work, err)
	}
	defer tmp.Close()
	h := sha256.New()
	w := &localWriter{w: tmp, path: tmp.Name()}
	write := func(w io.Writer) error { return unpack.Pack(ctx, tree, top, w) }
	if gitTree {
		write = func(w io.Writer) error { return unpack.PackGitTree(ctx, tree, top, f.epoch, w) }
	}
	if err := write(io.MultiWriter(w, h)); err != nil {
		if w.err != nil {
			return "", w.err
		}
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", local("writing", tmp.Name(), err)
	}
	// Named after its own SHA-256 under prepared.Dir, so that every engine's check
	// (prepared.Check) can tell the file is still what was written.
	dst := prepared.Path(f.cacheDir, h.Sum(nil))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", local("creating the cache directory", filepath.Dir(dst), err)
	}
	// An identical file already there is kept, not renamed over: builds running side by side
	// (build.yml's legs under one runner, each with its own Dagger session) prepare the same
	// archive, and a file replaced while another build's engine session is uploading it fails
	// that build ("conflict at <file>: mod time changed"). Kept only if its bytes still hash
	// to its name; anything else there is replaced.
	if prepared.Check(dst) == nil {
		return dst, nil
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return "", local("making read-only", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", local("moving into the cache", dst, err)
	}
	return dst, nil
}

// removeRefused removes a cached archive that matched its pin but that pipeline/unpack
// refused: a lock that pins such a file gets nothing from the cache either.
func removeRefused(file string) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the refused archive %s from the cache: %w", file, err)
	}
	return nil
}

// PrepareFile is prepare for an archive whose bytes the caller verified some other way (a
// test's own tarball): unpacked under the policy and written back into cacheDir/prepared.
// It returns the path a build stage may read.
func PrepareFile(ctx context.Context, archive, cacheDir string) (string, error) {
	f := New(WithCacheDir(cacheDir))
	pr, err := f.prepare(ctx, lock.Component{}, archive, filepath.Base(archive), "the caller")
	return pr.path, err
}

// scratchDir makes a fresh directory named after pattern in the cache's tmp directory (on the
// cache's file system, so what is made there can be renamed into the cache).
func (f *Fetcher) scratchDir(pattern string) (string, error) {
	tmpDir := filepath.Join(f.cacheDir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return "", local("creating the cache directory", tmpDir, err)
	}
	dir, err := os.MkdirTemp(tmpDir, pattern)
	if err != nil {
		return "", local("creating a directory in", tmpDir, err)
	}
	return dir, nil
}
