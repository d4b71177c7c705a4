package unpack

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Writing what place checked: every path is made relative to the open destination, so the
// kernel resolves an entry's own name only, and a failure of this machine (a full disk, a
// permission) is said as such (localError), never as a refusal of the archive.

func (x *extraction) dir(h *tar.Header, parent *node, leaf, rel string) error {
	n := x.root
	if parent != nil {
		n = parent.kids[leaf]
		switch {
		case n == nil:
			if err := unix.Mkdirat(x.dirfd, rel, 0o700); err != nil {
				return x.localError("making the directory", rel, err)
			}
			n = &node{name: leaf, parent: parent, kind: kindDir, kids: map[string]*node{}}
			parent.kids[leaf] = n
		case n.kind != kindDir:
			return x.refuse(shorten(h.Name), "the same path appears twice")
		default:
			x.made-- // counted when its name was first implied
		}
	}
	if n.listed {
		return x.refuse(shorten(h.Name), "the same path appears twice")
	}
	n.listed, n.mtime, n.mode = true, h.ModTime.Truncate(time.Second), os.FileMode(h.Mode&0o777)|0o700
	return nil
}

// claim records a file or link at parent/leaf, which must not exist yet.
func (x *extraction) claim(h *tar.Header, parent *node, leaf string, k kind) (*node, error) {
	if _, dup := parent.kids[leaf]; dup {
		return nil, x.refuse(shorten(h.Name), "the same path appears twice")
	}
	n := &node{name: leaf, parent: parent, kind: k}
	parent.kids[leaf] = n
	return n, nil
}

func (x *extraction) file(h *tar.Header, parent *node, leaf, rel string, r io.Reader) error {
	if h.Size > x.lim.EntryBytes {
		return x.refuse(shorten(h.Name), "%d bytes, over the limit of %d bytes for one file", h.Size, x.lim.EntryBytes)
	}
	if x.res.Bytes+h.Size > x.lim.TotalBytes {
		return x.refuse(shorten(h.Name), "the files so far and this one hold more than the limit of %d bytes", x.lim.TotalBytes)
	}
	x.res.Bytes += h.Size
	if _, err := x.claim(h, parent, leaf, kindFile); err != nil {
		return err
	}
	x.files++
	fd, err := unix.Openat(x.dirfd, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return x.localError("creating", rel, err)
	}
	out := os.NewFile(uintptr(fd), filepath.Join(x.dst, rel))
	w := &writeErr{w: out}
	if x.buf == nil {
		x.buf = make([]byte, 32<<10)
	}
	n, err := io.CopyBuffer(w, r, x.buf)
	if err == nil {
		t := unix.NsecToTimeval(h.ModTime.Truncate(time.Second).UnixNano())
		err = out.Chmod(os.FileMode(h.Mode&0o777) | 0o400)
		if err == nil {
			err = unix.Futimes(fd, []unix.Timeval{t, t})
		}
		if err != nil {
			w.err = err
		}
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err, w.err = cerr, cerr
	}
	if w.err != nil {
		return x.localError("writing", rel, w.err)
	}
	if err != nil {
		return x.readError(err)
	}
	if n != h.Size {
		return x.refuse(shorten(h.Name), "holds %d bytes, its header says %d", n, h.Size)
	}
	return nil
}

// writeErr remembers an error of writing, to tell it from one of reading the archive: a disk
// that is full is this machine's fault, not the archive's.
type writeErr struct {
	w   io.Writer
	err error
}

func (w *writeErr) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

func (x *extraction) symlink(h *tar.Header, parent *node, leaf, rel string) error {
	if h.Linkname == "" || strings.HasPrefix(h.Linkname, "/") {
		return x.refuse(shorten(h.Name), "a symbolic link to an absolute or empty target %q", shorten(h.Linkname))
	}
	if len(h.Linkname) > maxNameBytes {
		return x.refuse(shorten(h.Name), "a symbolic link target of %d bytes, over the limit of %d bytes on a name", len(h.Linkname), maxNameBytes)
	}
	// A target is a name the stage's tools resolve and print (ls -l, make's messages), so it
	// follows the rules of names: no control character (a target that rewrites the terminal
	// or splits a log line), no segment longer than a name's. Its "." and ".." segments stay:
	// a relative link needs them, and checkLinks resolves them inside the tree.
	for _, r := range h.Linkname {
		if r < 0x20 || r == 0x7f {
			return x.refuse(shorten(h.Name), "a control character in the symbolic link's target %q", shorten(h.Linkname))
		}
	}
	for seg := range strings.SplitSeq(h.Linkname, "/") {
		if len(seg) > maxSegmentBytes {
			return x.refuse(shorten(h.Name), "a symbolic link target with a segment of %d bytes, over the limit of %d bytes on one segment of a name", len(seg), maxSegmentBytes)
		}
	}
	n, err := x.claim(h, parent, leaf, kindLink)
	if err != nil {
		return err
	}
	n.target = h.Linkname
	x.links = append(x.links, n)
	x.files++
	if err := unix.Symlinkat(h.Linkname, x.dirfd, rel); err != nil {
		return x.localError("making the symbolic link", rel, err)
	}
	t := unix.NsecToTimespec(h.ModTime.Truncate(time.Second).UnixNano())
	if err := unix.UtimesNanoAt(x.dirfd, rel, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return x.localError("setting the time of", rel, err)
	}
	return nil
}

// finishDirs gives every directory its mode and time, each after everything below it
// (writing into a directory changes its time). Directories the archive did not list get 0755
// and time zero. Each directory is opened relative to its parent, so the work is one step per
// directory whatever its depth.
func (x *extraction) finishDirs() error {
	return x.finishDir(x.root, x.dirfd, "")
}

func (x *extraction) finishDir(n *node, fd int, rel string) error {
	if err := x.ctx.Err(); err != nil {
		return err
	}
	for _, k := range n.kids {
		if k.kind != kindDir {
			continue
		}
		krel := k.name
		if rel != "" {
			krel = rel + "/" + k.name
		}
		kfd, err := unix.Openat(fd, k.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return x.localError("opening", krel, err)
		}
		err = x.finishDir(k, kfd, krel)
		unix.Close(kfd)
		if err != nil {
			return err
		}
	}
	mode, t := os.FileMode(0o755), time.Unix(0, 0)
	if n.listed {
		mode = n.mode
		if !n.mtime.IsZero() {
			t = n.mtime
		}
	}
	if err := unix.Fchmod(fd, uint32(mode)); err != nil {
		return x.localError("setting the mode of", rel, err)
	}
	tv := unix.NsecToTimeval(t.UnixNano())
	if err := unix.Futimes(fd, []unix.Timeval{tv, tv}); err != nil {
		return x.localError("setting the time of", rel, err)
	}
	return nil
}
