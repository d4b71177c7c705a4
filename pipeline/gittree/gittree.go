// Package gittree computes the git tree object ID of an unpacked source tree: the check
// that a source pinned by git commit (lock: "git") is exactly that commit's tree, whichever
// way its archive was made (git archive of a fetched commit, or a mirror's copy). It hashes
// the files as pipeline/unpack wrote them, which are the files the build compiles (every
// file's bytes, its executable bit, every symlink), the way git does, with no clean/smudge
// filters or .gitattributes conversions, so no checkout setting of this machine changes the
// answer.
package gittree

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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

// OfDir returns the tree ID (40 lower-case hex digits) of the files below dir, as git
// computes it: regular files (executable or not, by the owner's execute bit), symbolic links
// (their target) and directories; a directory with no file below it is not part of a git
// tree and is ignored, as git ignores it. Anything else (a device, a FIFO, a socket) is an
// error, since git cannot hold one. dir is what pipeline/unpack wrote: the files hashed are
// the files the build compiles.
func OfDir(ctx context.Context, top string) (string, error) {
	root := dir{}
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // a signal or the run's deadline: checked between files
		}
		rel, err := filepath.Rel(top, p)
		if err != nil || rel == "." {
			return err
		}
		if err := add(root, filepath.ToSlash(rel), p, d); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	id, ok := close(root)
	if !ok {
		// No file at all: git's empty tree, as `git write-tree` gives for an empty index.
		// close's zero ID here once let a directories-only archive verify against a pin of
		// 0000... (issue 47), an ID git never gives a tree.
		return emptyTree, nil
	}
	return hex.EncodeToString(id[:]), nil
}

// emptyTree is the ID git gives a tree with no entries (the SHA-1 of "tree 0\x00").
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

func add(root dir, rel, p string, d fs.DirEntry) error {
	var e *entry
	switch t := d.Type(); {
	case t.IsDir():
		_, err := subdir(root, rel)
		return err
	case t.IsRegular():
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := modeFile
		if fi.Mode()&0o100 != 0 {
			mode = modeExec
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		id, err := blob(f, fi.Size())
		if err != nil {
			return err
		}
		e = &entry{mode: mode, id: id}
	case t&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		id, _ := blob(strings.NewReader(target), int64(len(target)))
		e = &entry{mode: modeSymlink, id: id}
	default:
		return fmt.Errorf("is a %s, which a git tree cannot hold", t)
	}
	parent, name := path.Split(rel)
	d0, err := subdir(root, strings.TrimSuffix(parent, "/"))
	if err != nil {
		return err
	}
	d0[name] = e
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
