// Package unpack is the one way a fetched source archive is opened: Extract unpacks it,
// exactly once, into a fresh directory under a strict policy, and Pack writes that directory
// back as the archive the build stages read. A stage never unpacks the bytes a mirror or
// upstream sent: it unpacks what Pack wrote from the files that were checked, so what is
// hashed (pipeline/gittree over the directory) and what is compiled are the same files.
//
// The policy, in one place. An archive is refused, naming the file, the entry and the rule,
// when it is not:
//   - exactly one compressed stream (gzip or xz), with nothing after it, and inside it one
//     tar archive followed by nothing but zero padding;
//   - one top directory, every entry below it, and at least one file or symbolic link;
//   - regular files, directories and symbolic links only (a pax global header, which git
//     archive writes, is read and ignored): no hard links, devices, FIFOs or other types;
//   - names that are relative, with no "." or ".." segment, no empty segment and no control
//     character, each at most once, none below a file or a symbolic link;
//   - symbolic links whose target is relative, at most as long as a name, with no control
//     character and no segment longer than a name's, and that stays inside the tree,
//     following the tree's own links;
//   - modes without set-user-ID, set-group-ID or sticky bits;
//   - within the Limits: entries, bytes of one file, bytes of all files, and the context's
//     deadline (checked between reads, so SIGINT and --timeout end it promptly).
//
// What Pack writes back besides the files' names, bytes and link targets depends on what
// verified them. An archive checked by its SHA-256 keeps its own modes and times (Pack): the
// digest covers them. One checked by its git tree gets git's metadata (PackGitTree: modes
// from the executable bit, every time the lock's source_date_epoch, no empty directories),
// as the tree covers nothing else: what a mirror chose there never reaches a stage.
package unpack

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ulikunitz/xz"
	"golang.org/x/sys/unix"
)

// Limits bound what one archive may unpack to.
type Limits struct {
	Entries    int   // entries of every type
	EntryBytes int64 // bytes of one regular file
	TotalBytes int64 // bytes of all regular files
}

// DefaultLimits are several times the largest source this project builds (AWS-LC: some
// 11,000 entries and 170 MB, its largest file under 4 MB; OpenSSL about 60 MB), and small
// enough that an archive made to exhaust the disk or memory is refused after a bounded
// amount of work on any machine, fast or slow.
var DefaultLimits = Limits{Entries: 100_000, EntryBytes: 256 << 20, TotalBytes: 1 << 30}

// maxPadding bounds the zero bytes allowed after the tar archive's end, inside the compressed
// stream: tar pads its output to a whole record (10 KiB by default).
const maxPadding = 1 << 20

// Error is an archive the policy refuses.
type Error struct {
	Archive string // the archive's file name
	Entry   string // the entry's name as the archive spells it; "" for the archive itself
	Rule    string // the rule it breaks
}

func (e *Error) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("archive %s refused: %s; nothing from it was used or cached", e.Archive, e.Rule)
	}
	return fmt.Sprintf("archive %s refused: entry %q: %s; nothing from it was used or cached", e.Archive, e.Entry, e.Rule)
}

// Result describes an extracted archive.
type Result struct {
	Top     string // the top directory's name (the archive's, not dst)
	Entries int
	Bytes   int64 // bytes of regular files
}

// The limits on names, part of the policy and the same on every machine. A name is at most
// 4,096 bytes (Linux's PATH_MAX), a segment at most 255 (NAME_MAX), and at most maxDepth
// segments deep. No source this project builds comes near them (AWS-LC's deepest file is
// about ten segments down, its longest name under 200 bytes); they are there so that the work
// an entry costs is bounded by its header: a 3.4 MB archive of 99,000 files 2,000 segments
// deep held a build for an estimated 70 CPU-minutes when every entry joined and hashed
// every ancestor's path (issue 47).
const (
	maxNameBytes    = 4096
	maxSegmentBytes = 255
	maxDepth        = 128
)

// kind of an entry already written.
type kind int

const (
	kindDir kind = iota
	kindFile
	kindLink
)

// node is a path written below the top directory: the tree is kept as the archive builds it,
// one segment per node, so that placing an entry walks its own segments once (a map lookup
// per segment) instead of hashing the whole path of every ancestor, and the memory it takes
// is the bytes of the names' segments, not of every ancestor's full path.
type node struct {
	name   string // its segment; "" for the top directory
	parent *node
	kind   kind
	kids   map[string]*node // directories: the entries below
	target string           // symbolic links: the target
	listed bool             // directories: the archive has an entry for it (else implied)
	mode   os.FileMode      // listed directories
	mtime  time.Time        // listed directories

	// resolving and resolved memoise checkLinks for a symbolic link.
	resolving bool
	resolved  *position
}

// path is n's path below the top directory, for messages.
func (n *node) path() string {
	var segs []string
	for ; n != nil && n.parent != nil; n = n.parent {
		segs = append(segs, n.name)
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/")
}

type extraction struct {
	ctx   context.Context
	name  string // archive file name, for errors
	dst   string
	dirfd int // dst, open: every entry is made relative to it (its path is resolved once)
	lim   Limits
	top   string
	root  *node
	links []*node // symbolic links, in archive order
	made  int     // entries and the directories they imply: bounded by lim.Entries
	res   Result
	files int           // regular files and symbolic links written
	raw   *bufio.Reader // the archive's bytes, below the decompressor
	buf   []byte        // for copying files: one for the archive, not one per file
}

// Extract unpacks archive into the directory dst, which must not exist, and returns what it
// held. The top directory is stripped: its contents are dst's. On any error dst is removed.
func Extract(ctx context.Context, archive, dst string, lim Limits) (Result, error) {
	f, err := os.Open(archive)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	if err := os.Mkdir(dst, 0o700); err != nil {
		return Result{}, fmt.Errorf("unpacking %s: %w", filepath.Base(archive), err)
	}
	x, err := newExtraction(ctx, filepath.Base(archive), dst, lim)
	if err == nil {
		err = x.run(f)
		x.close()
	}
	if err != nil {
		os.RemoveAll(dst)
		if ctx.Err() != nil {
			return Result{}, &DeadlineError{Archive: filepath.Base(archive), Err: context.Cause(ctx)}
		}
		return Result{}, err
	}
	return x.res, nil
}

// DeadlineError is an unpacking that the run's deadline or a signal ended: not a verdict on
// the archive, which may be fine (a slow disk, a short --timeout).
type DeadlineError struct {
	Archive string
	Err     error // context.Cause: context.DeadlineExceeded, context.Canceled or the cause given
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("unpacking %s: stopped at the deadline or on a signal, before the archive was judged: %v", e.Archive, e.Err)
}

func (e *DeadlineError) Unwrap() error { return e.Err }

func newExtraction(ctx context.Context, name, dst string, lim Limits) (*extraction, error) {
	fd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: opening %s: %w", name, dst, err)
	}
	return &extraction{ctx: ctx, name: name, dst: dst, dirfd: fd, lim: lim, root: &node{kind: kindDir, kids: map[string]*node{}}}, nil
}

func (x *extraction) close() { unix.Close(x.dirfd) }

// localError is a failure of this machine (a full disk, a permission, a file-size limit)
// while writing what the archive holds: said as such, with the path, and never as a refusal
// of the archive.
func (x *extraction) localError(op, rel string, err error) error {
	return fmt.Errorf("unpacking %s: %s %s on this machine: %w", x.name, op, filepath.Join(x.dst, filepath.FromSlash(rel)), err)
}

func (x *extraction) refuse(entry, format string, args ...any) error {
	return &Error{Archive: x.name, Entry: entry, Rule: fmt.Sprintf(format, args...)}
}

func (x *extraction) run(f io.Reader) error {
	raw := bufio.NewReader(ctxReader{x.ctx, f})
	x.raw = raw
	stream, finish, err := x.decompressor(raw)
	if err != nil {
		return err
	}
	tr := tar.NewReader(ctxReader{x.ctx, stream})
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return x.readError(err)
		}
		if err := x.entry(h, tr); err != nil {
			return err
		}
	}
	if x.top == "" {
		return x.refuse("", "it holds no entries")
	}
	if x.files == 0 {
		// No source this project builds is empty, and git records no directory without a
		// file below it: such an archive can only stand for git's empty tree, which no
		// release is (issue 47: one verified against a pin of 0000...).
		return x.refuse("", "it holds no file (only directories); a source archive holds at least one file or symbolic link")
	}
	if err := x.trailer(stream); err != nil {
		return err
	}
	if err := finish(); err != nil {
		return err
	}
	if err := x.checkLinks(); err != nil {
		return err
	}
	return x.finishDirs()
}

func (x *extraction) readError(err error) error {
	if x.ctx.Err() != nil {
		return x.ctx.Err()
	}
	// ulikunitz/xz in single-stream mode finds what follows the stream itself, and says so
	// only in words (its error value is unexported).
	if strings.Contains(err.Error(), "xz: unexpected data after stream") {
		return x.refuse("", "bytes follow the compressed stream (a second stream or appended data)")
	}
	// The tar archive ended early where the first stream ended, and more follows: the rest
	// of the archive is in a second stream, which the policy refuses.
	if errors.Is(err, io.ErrUnexpectedEOF) && x.raw != nil {
		if _, perr := x.raw.Peek(1); perr == nil {
			return x.refuse("", "bytes follow the compressed stream (a second stream or appended data)")
		}
	}
	return x.refuse("", "it is not a readable tar archive: %v", err)
}

// decompressor opens the one compressed stream at the start of raw; finish checks that
// nothing follows it.
func (x *extraction) decompressor(raw *bufio.Reader) (io.Reader, func() error, error) {
	magic, _ := raw.Peek(6)
	atEnd := func() error {
		if _, err := raw.Peek(1); err == nil {
			return x.refuse("", "bytes follow the compressed stream (a second stream or appended data)")
		} else if !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return nil, nil, x.refuse("", "its gzip header does not read: %v", err)
		}
		zr.Multistream(false)
		return zr, atEnd, nil
	case bytes.Equal(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		zr, err := xz.ReaderConfig{SingleStream: true}.NewReader(raw)
		if err != nil {
			return nil, nil, x.refuse("", "its xz header does not read: %v", err)
		}
		return zr, atEnd, nil
	}
	return nil, nil, x.refuse("", "it is not gzip or xz compressed (the formats source archives come in)")
}

// trailer reads what the compressed stream holds after the tar archive's end: zero padding
// only, and not much of it.
func (x *extraction) trailer(stream io.Reader) error {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := stream.Read(buf)
		for _, b := range buf[:k] {
			if b != 0 {
				return x.refuse("", "data follows the tar archive's end inside the compressed stream")
			}
		}
		n += int64(k)
		if n > maxPadding {
			return x.refuse("", "more than %d bytes of padding follow the tar archive's end", maxPadding)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return x.readError(err)
		}
	}
}

// entry checks one header against the policy and writes it.
func (x *extraction) entry(h *tar.Header, r io.Reader) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	x.res.Entries++
	if err := x.count(h.Name); err != nil {
		return err
	}
	parent, leaf, rel, err := x.place(h)
	if err != nil {
		return err
	}
	if h.Mode&(cISUID|cISGID|cISVTX) != 0 {
		return x.refuse(h.Name, "mode %04o has a set-user-ID, set-group-ID or sticky bit", h.Mode&0o7777)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return x.dir(h, parent, leaf, rel)
	case tar.TypeReg:
		return x.file(h, parent, leaf, rel, r)
	case tar.TypeSymlink:
		return x.symlink(h, parent, leaf, rel)
	case tar.TypeLink:
		return x.refuse(h.Name, "a hard link (to %q)", h.Linkname)
	}
	return x.refuse(h.Name, "entry type %q is not a regular file, directory or symbolic link", h.Typeflag)
}

// count counts one more thing made (an entry, or a directory an entry's name implies)
// against the limit on entries: names that imply directories the archive does not list make
// as many directories as they are deep, and those are work and inodes as much as entries.
func (x *extraction) count(name string) error {
	x.made++
	if x.made > x.lim.Entries {
		return x.refuse(name, "more than %d entries (the limit on entries, counting the directories their names imply)", x.lim.Entries)
	}
	return nil
}

// The set-id and sticky bits in a tar header's mode.
const (
	cISUID = 0o4000
	cISGID = 0o2000
	cISVTX = 0o1000
)

// place checks an entry's name and returns the directory it goes in (nil for the top
// directory itself), its last segment and its path below the top directory. It walks the
// name's segments once: each parent is looked up by its segment in its own parent, and a
// directory the archive did not list is made here, once.
func (x *extraction) place(h *tar.Header) (*node, string, string, error) {
	if len(h.Name) > maxNameBytes {
		return nil, "", "", x.refuse(h.Name[:64]+"...", "a name of %d bytes, over the limit of %d bytes on a name", len(h.Name), maxNameBytes)
	}
	name := strings.TrimSuffix(h.Name, "/")
	if h.Typeflag == tar.TypeDir {
		name = strings.TrimRight(h.Name, "/")
	}
	if name == "" || strings.HasPrefix(h.Name, "/") {
		return nil, "", "", x.refuse(h.Name, "an absolute or empty name")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return nil, "", "", x.refuse(h.Name, "a control character in the name")
		}
	}
	segs := strings.Split(name, "/")
	if len(segs) > maxDepth {
		return nil, "", "", x.refuse(shorten(h.Name), "%d segments deep, over the limit of %d segments on a name", len(segs), maxDepth)
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, "", "", x.refuse(shorten(h.Name), "a %q segment in the name (names must be plain paths)", s)
		}
		if len(s) > maxSegmentBytes {
			return nil, "", "", x.refuse(shorten(h.Name), "a segment of %d bytes, over the limit of %d bytes on one segment of a name", len(s), maxSegmentBytes)
		}
	}
	if x.top == "" {
		x.top = segs[0]
		x.res.Top = segs[0]
	}
	if segs[0] != x.top {
		return nil, "", "", x.refuse(shorten(h.Name), "outside the archive's one top directory %q", x.top+"/")
	}
	if len(segs) == 1 {
		if h.Typeflag != tar.TypeDir {
			return nil, "", "", x.refuse(h.Name, "the top directory %q is not a directory", x.top)
		}
		return nil, "", "", nil
	}
	rel := name[len(x.top)+1:]
	// Every parent must be a directory (listed, or made here): nothing is written through a
	// symbolic link or below a file.
	cur, end := x.root, 0
	for _, seg := range segs[1 : len(segs)-1] {
		if end > 0 {
			end++ // the slash
		}
		end += len(seg)
		k := cur.kids[seg]
		if k == nil {
			if err := x.count(h.Name); err != nil {
				return nil, "", "", err
			}
			if err := unix.Mkdirat(x.dirfd, rel[:end], 0o700); err != nil {
				return nil, "", "", x.localError("making the directory", rel[:end], err)
			}
			k = &node{name: seg, parent: cur, kind: kindDir, kids: map[string]*node{}}
			cur.kids[seg] = k
		} else if k.kind != kindDir {
			return nil, "", "", x.refuse(shorten(h.Name), "below %q, which is not a directory", shorten(x.top+"/"+rel[:end]))
		}
		cur = k
	}
	return cur, segs[len(segs)-1], rel, nil
}

// shorten keeps a message about a long name readable: its start and its end.
func shorten(name string) string {
	if len(name) <= 200 {
		return name
	}
	return name[:100] + "..." + name[len(name)-100:]
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
