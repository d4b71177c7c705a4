package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// Owner is a numeric uid:gid. Names are never written into layers: the image's
// /etc/passwd decides what they mean.
type Owner struct{ UID, GID int }

// Nonroot is the user the image runs as (plan.Runtime.User, distroless's nonroot): the
// owner of the runtime contract's writable directories, and of a stand-in base's home.
var Nonroot = Owner{UID: plan.Runtime.UID(), GID: plan.Runtime.GID()}

// layerSpec says how a directory becomes a layer (WithModTime, WithOwners; Assemble also
// normalizes the modes). Everything that could differ between two checkouts or two builds of
// the same content (mtimes, the builder's uid, its umask, directory read order, hard links)
// is replaced by what it says, so the same content always gives the same layer digest.
type layerSpec struct {
	modTime time.Time
	owners  map[string]Owner
	// normalizeModes replaces permissions with 0755 for directories and files with any
	// execute bit, 0644 for other files, so the builder's umask cannot leak into the
	// image. Without it, the permission bits on disk are kept (the base rootfs extracted
	// from .debs needs that: /tmp is 1777, /root 0700).
	normalizeModes bool
}

// WithModTime stamps every entry of a TreeLayer (SOURCE_DATE_EPOCH); default the zero time.
func WithModTime(t time.Time) Option { return func(o *options) { o.layer.modTime = t } }

// WithOwners maps a slash-separated path relative to a TreeLayer's tree ("var/cache/nginx")
// to the owner of that entry and everything beneath it; the longest matching prefix wins.
// Everything else is owned by 0:0.
func WithOwners(owners map[string]Owner) Option { return func(o *options) { o.layer.owners = owners } }

// TreeLayer writes dir as an uncompressed tar in a fixed order (lexical by path, parents
// before children), then returns it as an OCI gzip layer compressed at the best level.
// Regular files, directories and symbolic links are supported; device files, sockets and
// fifos are refused (an install tree has no business holding them). Hard links are
// stored as separate regular files, which keeps the result independent of how the tree
// was copied.
func TreeLayer(dir string, opts ...Option) (v1.Layer, error) {
	return treeLayer(dir, makeOptions(opts).layer)
}

func treeLayer(dir string, o layerSpec) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := writeTree(&buf, dir, o); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
	if err != nil {
		return nil, fmt.Errorf("making a layer of %s: %w", dir, err)
	}
	return l, nil
}

// writeTree writes dir to w as a deterministic tar stream (see TreeLayer).
func writeTree(w io.Writer, dir string, o layerSpec) error {
	paths, err := treePaths(dir)
	if err != nil {
		return err
	}
	mtime := o.modTime.UTC()
	tw := tar.NewWriter(w)
	for _, rel := range paths {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		hdr, err := treeHeader(dir, rel, mtime, o)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing tar header for %s: %w", rel, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := copyInto(tw, full, hdr.Size); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finishing tar of %q: %w", dir, err)
	}
	return nil
}

// treePaths lists what is below dir, slash-separated and relative to it, in tar order.
func treePaths(dir string) ([]string, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("reading tree %q: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("reading tree %q: not a directory", dir)
	}
	var paths []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking tree %q: %w", dir, err)
	}
	// WalkDir already visits in lexical order per directory; sorting the full paths
	// makes the order independent of that detail (and of the OS's separators).
	sort.Slice(paths, func(i, j int) bool { return tarLess(paths[i], paths[j]) })
	return paths, nil
}

// treeHeader is the tar header of rel (below dir): its type, the owner and mode o gives
// it, dated mtime.
func treeHeader(dir, rel string, mtime time.Time, o layerSpec) (*tar.Header, error) {
	full := filepath.Join(dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(full)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", full, err)
	}
	own := ownerOf(rel, o.owners)
	hdr := &tar.Header{
		Name:    rel,
		ModTime: mtime,
		Uid:     own.UID,
		Gid:     own.GID,
		Format:  tar.FormatPAX,
	}
	perm := fi.Mode().Perm() | fi.Mode()&(fs.ModeSticky|fs.ModeSetgid|fs.ModeSetuid)
	switch {
	case fi.Mode().IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
		if o.normalizeModes {
			perm = 0o755
		}
	case fi.Mode().IsRegular():
		hdr.Typeflag = tar.TypeReg
		hdr.Size = fi.Size()
		if o.normalizeModes {
			perm = 0o644
			if fi.Mode()&0o111 != 0 {
				perm = 0o755
			}
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		hdr.Typeflag = tar.TypeSymlink
		if hdr.Linkname, err = os.Readlink(full); err != nil {
			return nil, fmt.Errorf("reading link %q: %w", full, err)
		}
		perm = 0o777
	default:
		return nil, fmt.Errorf("tree %q: %s is a %s; only files, directories and symlinks can go into the image", dir, rel, fi.Mode().Type())
	}
	hdr.Mode = tarMode(perm)
	return hdr, nil
}

// copyInto copies the regular file full, of size bytes when its header was written, into tw.
func copyInto(tw *tar.Writer, full string, size int64) error {
	f, err := os.Open(full)
	if err != nil {
		return fmt.Errorf("reading %q: %w", full, err)
	}
	defer f.Close()
	n, err := io.Copy(tw, f)
	if err != nil {
		return fmt.Errorf("copying %q into the layer: %w", full, err)
	}
	if n != size {
		return fmt.Errorf("copying %q into the layer: it changed size while being read", full)
	}
	return nil
}

// tarLess orders paths component by component, so "a/b" comes before "a-b" and every
// directory comes right before its contents.
func tarLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}

func ownerOf(rel string, owners map[string]Owner) Owner {
	best, bestLen := Owner{}, -1
	for p, o := range owners {
		p = strings.Trim(path.Clean(p), "/")
		if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > bestLen {
			best, bestLen = o, len(p)
		}
	}
	return best
}

// tarMode converts Go's file mode bits to the tar header's Unix bits.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
