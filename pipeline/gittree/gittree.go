// Package gittree computes the git tree object ID of a source tarball's contents: the check
// that a source pinned by git commit (lock: "git") is exactly that commit's tree, whichever
// way the tarball was made (git archive of a fetched commit, or a mirror's copy). It hashes
// what the build will compile (every file's bytes, its executable bit, every symlink) the way
// git does, with no clean/smudge filters or .gitattributes conversions, so no checkout
// setting of this machine changes the answer.
package gittree

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// Git's modes, as written in tree objects.
const (
	modeFile    = "100644"
	modeExec    = "100755"
	modeSymlink = "120000"
	modeTree    = "40000"
)

// dir is a tree under construction: entry name -> entry.
type dir map[string]*entry

type entry struct {
	mode string
	id   [sha1.Size]byte // blob ID (files, symlinks); computed on close for trees
	sub  dir
}

// OfFile is ofTarball of the file at name.
func OfFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	id, err := ofTarball(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return id, nil
}

// ofTarball returns the tree ID (40 lower-case hex digits) of a tarball's contents below its
// one top-level directory (the layout of `git archive --prefix=NAME/` and of release
// tarballs). The tarball may be gzip-compressed. Directories without files are not part of a
// git tree and are ignored, as git ignores them; a hard link, device or FIFO is an error,
// since git cannot hold one.
func ofTarball(r io.Reader) (string, error) {
	br := bufio.NewReader(r)
	var in io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", fmt.Errorf("reading gzip: %w", err)
		}
		defer zr.Close()
		zr.Multistream(false)
		in = zr
	}
	root := dir{}
	top := ""
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("reading tar: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // git archive's pax header: the commit ID as a comment
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		first, rest, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top || name == "" {
			return "", fmt.Errorf("entry %q is outside the tarball's top directory %q/", h.Name, top)
		}
		if err := add(root, rest, h, tr); err != nil {
			return "", fmt.Errorf("entry %q: %w", h.Name, err)
		}
	}
	if top == "" {
		return "", errors.New("the tarball is empty")
	}
	id, _ := close(root)
	return hex.EncodeToString(id[:]), nil
}

func add(root dir, rel string, h *tar.Header, r io.Reader) error {
	if rel == "" {
		return nil // the top directory itself
	}
	var e *entry
	switch h.Typeflag {
	case tar.TypeDir:
		_, err := subdir(root, rel)
		return err
	case tar.TypeReg:
		mode := modeFile
		if h.Mode&0o100 != 0 {
			mode = modeExec
		}
		id, err := blob(r, h.Size)
		if err != nil {
			return err
		}
		e = &entry{mode: mode, id: id}
	case tar.TypeSymlink:
		id, _ := blob(strings.NewReader(h.Linkname), int64(len(h.Linkname)))
		e = &entry{mode: modeSymlink, id: id}
	default:
		return fmt.Errorf("is of tar type %q, which a git tree cannot hold", h.Typeflag)
	}
	parent, name := path.Split(rel)
	d, err := subdir(root, strings.TrimSuffix(parent, "/"))
	if err != nil {
		return err
	}
	if _, dup := d[name]; dup {
		return errors.New("appears twice")
	}
	d[name] = e
	return nil
}

// subdir returns the directory at rel ("" is root), making missing ones.
func subdir(root dir, rel string) (dir, error) {
	d := root
	if rel == "" {
		return d, nil
	}
	for _, part := range strings.Split(rel, "/") {
		e, ok := d[part]
		if !ok {
			e = &entry{mode: modeTree, sub: dir{}}
			d[part] = e
		}
		if e.sub == nil {
			return nil, fmt.Errorf("%q is a file and a directory", part)
		}
		d = e.sub
	}
	return d, nil
}

func blob(r io.Reader, size int64) ([sha1.Size]byte, error) {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	if n, err := io.Copy(h, r); err != nil || n != size {
		var id [sha1.Size]byte
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return id, err
	}
	var id [sha1.Size]byte
	copy(id[:], h.Sum(nil))
	return id, nil
}

// close hashes d as git does; ok is false for a directory with no file below it, which git
// does not record.
func close(d dir) (id [sha1.Size]byte, ok bool) {
	type named struct {
		key  string // git's sort key: a directory sorts as if its name ended in "/"
		name string
		e    *entry
	}
	var list []named
	for name, e := range d {
		key := name
		if e.sub != nil {
			sid, ok := close(e.sub)
			if !ok {
				continue
			}
			e.id = sid
			key += "/"
		}
		list = append(list, named{key, name, e})
	}
	if len(list) == 0 {
		return id, false
	}
	sort.Slice(list, func(i, j int) bool { return list[i].key < list[j].key })
	var body bytes.Buffer
	for _, n := range list {
		body.WriteString(n.e.mode + " " + n.name + "\x00")
		body.Write(n.e.id[:])
	}
	h := sha1.New()
	fmt.Fprintf(h, "tree %d\x00", body.Len())
	h.Write(body.Bytes())
	copy(id[:], h.Sum(nil))
	return id, true
}
