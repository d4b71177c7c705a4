package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/gittree"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// prepared is a verified archive as the build stages read it.
type prepared struct {
	path string // <cache>/prepared/<sha256 of the file>.tar.gz
	top  string // the archive's top directory
	tree string // the git tree of the files as unpacked
}

// preparedDir is where, below a fetcher's cache, the archives the stages read are kept, each
// named after its own SHA-256 (<hex>.tar.gz), so that a check before a build can tell that
// the file is still what was written.
const preparedDir = "prepared"

// prepare unpacks archive (the component's verified bytes, or bytes about to be verified by
// their tree) once, with pipeline/unpack's policy, into a fresh directory; checks a git
// source's pinned tree over the files as written; and writes them back with unpack.Pack as
// the archive the stages read. name is the file's name for messages (archive may be a
// temporary file). Nothing is left behind when it fails.
func (f *Fetcher) prepare(ctx context.Context, c lock.Component, archive, name, from string) (prepared, error) {
	work, err := f.scratchDir(".unpack-*")
	if err != nil {
		return prepared{}, err
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	res, err := unpack.Extract(ctx, archive, tree, unpack.DefaultLimits)
	if err != nil {
		var ue *unpack.Error
		if errors.As(err, &ue) {
			ue.Archive = name + " from " + safeio.RedactURL(from)
		}
		return prepared{}, err
	}
	id, err := gittree.OfDir(ctx, tree)
	if err != nil {
		return prepared{}, fmt.Errorf("hashing the files of %s: %w", name, err)
	}
	if g := c.Git; g != nil && id != g.Tree {
		return prepared{}, &TreeError{File: name, From: safeio.RedactURL(from), Commit: g.Commit, Want: g.Tree, Got: id}
	}
	p, err := f.pack(ctx, tree, res.Top, work)
	if err != nil {
		return prepared{}, fmt.Errorf("packing the verified files of %s: %w", name, err)
	}
	return prepared{path: p, top: res.Top, tree: id}, nil
}

// pack writes tree as the stages' archive into the cache under its own digest. The same
// files give the same bytes, so a second build renames an identical file over the first.
func (f *Fetcher) pack(ctx context.Context, tree, top, work string) (string, error) {
	tmp, err := os.CreateTemp(work, "packed-*")
	if err != nil {
		return "", err
	}
	defer tmp.Close()
	h := sha256.New()
	if err := unpack.Pack(ctx, tree, top, io.MultiWriter(tmp, h)); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	dir := filepath.Join(f.cacheDir, preparedDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, hex.EncodeToString(h.Sum(nil))+".tar.gz")
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", err
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

// CheckPrepared checks that path is an archive prepare wrote (named <sha256>.tar.gz) and
// that its bytes still hash to its name: what every engine checks before a stage reads it,
// since a file in a shared cache can change between the fetch and the build.
func CheckPrepared(path string) error {
	base := filepath.Base(path)
	want, ok := strings.CutSuffix(base, ".tar.gz")
	if !ok || !sha256RE.MatchString(want) {
		return fmt.Errorf("%s is not an archive pipeline/source prepared (<sha256>.tar.gz under %s/): a stage reads only the files unpacked and checked by pipeline/unpack, never a downloaded archive; fetch it with pipeline/source", path, preparedDir)
	}
	got, err := toolbox.FileSHA256(path)
	if err != nil {
		return fmt.Errorf("reading source %s: %w", path, err)
	}
	if got != want {
		return fmt.Errorf("source %s has sha256 %s, but was written with sha256 %s: the file is corrupt or tampered with; delete it and fetch again", path, got, want)
	}
	return nil
}

// scratchDir makes a fresh directory named after pattern in the cache's tmp directory (on the
// cache's file system, so what is made there can be renamed into the cache).
func (f *Fetcher) scratchDir(pattern string) (string, error) {
	tmpDir := filepath.Join(f.cacheDir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return "", fmt.Errorf("creating cache directory: %w", err)
	}
	dir, err := os.MkdirTemp(tmpDir, pattern)
	if err != nil {
		return "", fmt.Errorf("creating temporary directory: %w", err)
	}
	return dir, nil
}
