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
//   - symbolic links whose target is relative and stays inside the tree, following the
//     tree's own links;
//   - modes without set-user-ID, set-group-ID or sticky bits;
//   - within the Limits: entries, bytes of one file, bytes of all files, and the context's
//     deadline (checked between reads, so SIGINT and --timeout end it promptly).
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
	"sort"
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

// kind of an entry already written.
type kind int

const (
	kindDir kind = iota
	kindFile
	kindLink
)

type extraction struct {
	ctx     context.Context
	name    string // archive file name, for errors
	dst     string
	lim     Limits
	top     string
	seen    map[string]kind   // path below top -> kind; "" is the top directory
	links   map[string]string // symlink path below top -> target
	dirTime map[string]time.Time
	dirMode map[string]os.FileMode
	res     Result
	files   int           // regular files and symbolic links written
	raw     *bufio.Reader // the archive's bytes, below the decompressor
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
	x := &extraction{ctx: ctx, name: filepath.Base(archive), dst: dst, lim: lim,
		seen: map[string]kind{}, links: map[string]string{}, dirTime: map[string]time.Time{}, dirMode: map[string]os.FileMode{}}
	if err := x.run(f); err != nil {
		os.RemoveAll(dst)
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("unpacking %s: stopped at the deadline or on a signal: %w", x.name, context.Cause(ctx))
		}
		return Result{}, err
	}
	return x.res, nil
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
	if x.res.Entries > x.lim.Entries {
		return x.refuse(h.Name, "more than %d entries (the limit on entries)", x.lim.Entries)
	}
	rel, err := x.place(h)
	if err != nil {
		return err
	}
	if h.Mode&(cISUID|cISGID|cISVTX) != 0 {
		return x.refuse(h.Name, "mode %04o has a set-user-ID, set-group-ID or sticky bit", h.Mode&0o7777)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return x.dir(h, rel)
	case tar.TypeReg:
		return x.file(h, rel, r)
	case tar.TypeSymlink:
		return x.symlink(h, rel)
	case tar.TypeLink:
		return x.refuse(h.Name, "a hard link (to %q)", h.Linkname)
	}
	return x.refuse(h.Name, "entry type %q is not a regular file, directory or symbolic link", h.Typeflag)
}

// The set-id and sticky bits in a tar header's mode.
const (
	cISUID = 0o4000
	cISGID = 0o2000
	cISVTX = 0o1000
)

// place checks an entry's name and returns its path below the top directory ("" for the top
// directory itself).
func (x *extraction) place(h *tar.Header) (string, error) {
	name := strings.TrimSuffix(h.Name, "/")
	if h.Typeflag == tar.TypeDir {
		name = strings.TrimRight(h.Name, "/")
	}
	if name == "" || strings.HasPrefix(h.Name, "/") {
		return "", x.refuse(h.Name, "an absolute or empty name")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "", x.refuse(h.Name, "a control character in the name")
		}
	}
	segs := strings.Split(name, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", x.refuse(h.Name, "a %q segment in the name (names must be plain paths)", s)
		}
	}
	if x.top == "" {
		x.top = segs[0]
		x.res.Top = segs[0]
	}
	if segs[0] != x.top {
		return "", x.refuse(h.Name, "outside the archive's one top directory %q", x.top+"/")
	}
	if len(segs) == 1 && h.Typeflag != tar.TypeDir {
		return "", x.refuse(h.Name, "the top directory %q is not a directory", x.top)
	}
	rel := strings.Join(segs[1:], "/")
	// Every parent must be a directory (made here, or made implicitly): nothing is written
	// through a symbolic link or below a file.
	for i := 1; i < len(segs)-1; i++ {
		p := strings.Join(segs[1:i+1], "/")
		k, ok := x.seen[p]
		if ok && k != kindDir {
			return "", x.refuse(h.Name, "below %q, which is not a directory", x.top+"/"+p)
		}
	}
	return rel, nil
}

// mkparents makes the directories above rel that the archive did not list.
func (x *extraction) mkparents(rel string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		if _, ok := x.seen[p]; ok {
			continue
		}
		if err := os.Mkdir(filepath.Join(x.dst, filepath.FromSlash(p)), 0o700); err != nil {
			return err
		}
		x.seen[p] = kindDir
	}
	return nil
}

func (x *extraction) dir(h *tar.Header, rel string) error {
	if _, dup := x.dirTime[rel]; dup {
		return x.refuse(h.Name, "the same path appears twice")
	}
	if k, ok := x.seen[rel]; ok && k != kindDir {
		return x.refuse(h.Name, "the same path appears twice")
	}
	if rel != "" {
		if err := x.mkparents(rel); err != nil {
			return err
		}
		if _, ok := x.seen[rel]; !ok {
			if err := os.Mkdir(filepath.Join(x.dst, filepath.FromSlash(rel)), 0o700); err != nil {
				return err
			}
		}
	}
	x.seen[rel] = kindDir
	x.dirTime[rel] = h.ModTime.Truncate(time.Second)
	x.dirMode[rel] = os.FileMode(h.Mode&0o777) | 0o700
	return nil
}

func (x *extraction) claim(h *tar.Header, rel string, k kind) error {
	if _, dup := x.seen[rel]; dup {
		return x.refuse(h.Name, "the same path appears twice")
	}
	if err := x.mkparents(rel); err != nil {
		return err
	}
	x.seen[rel] = k
	return nil
}

func (x *extraction) file(h *tar.Header, rel string, r io.Reader) error {
	if h.Size > x.lim.EntryBytes {
		return x.refuse(h.Name, "%d bytes, over the limit of %d bytes for one file", h.Size, x.lim.EntryBytes)
	}
	if x.res.Bytes+h.Size > x.lim.TotalBytes {
		return x.refuse(h.Name, "the files so far and this one hold more than the limit of %d bytes", x.lim.TotalBytes)
	}
	x.res.Bytes += h.Size
	if err := x.claim(h, rel, kindFile); err != nil {
		return err
	}
	x.files++
	p := filepath.Join(x.dst, filepath.FromSlash(rel))
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return x.readError(err)
	}
	if n != h.Size {
		return x.refuse(h.Name, "holds %d bytes, its header says %d", n, h.Size)
	}
	if err := os.Chmod(p, os.FileMode(h.Mode&0o777)|0o400); err != nil {
		return err
	}
	t := h.ModTime.Truncate(time.Second)
	return os.Chtimes(p, t, t)
}

func (x *extraction) symlink(h *tar.Header, rel string) error {
	if h.Linkname == "" || strings.HasPrefix(h.Linkname, "/") {
		return x.refuse(h.Name, "a symbolic link to an absolute or empty target %q", h.Linkname)
	}
	if err := x.claim(h, rel, kindLink); err != nil {
		return err
	}
	x.links[rel] = h.Linkname
	x.files++
	p := filepath.Join(x.dst, filepath.FromSlash(rel))
	if err := os.Symlink(h.Linkname, p); err != nil {
		return err
	}
	t := unix.NsecToTimespec(h.ModTime.Truncate(time.Second).UnixNano())
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW)
}

// finishDirs gives every directory its mode and time, deepest first (writing into a
// directory changes its time). Directories the archive did not list get 0755 and time zero.
func (x *extraction) finishDirs() error {
	var dirs []string
	for p, k := range x.seen {
		if k == kindDir {
			dirs = append(dirs, p)
		}
	}
	if _, ok := x.seen[""]; !ok {
		dirs = append(dirs, "")
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i] > dirs[j] })
	for _, d := range dirs {
		p := filepath.Join(x.dst, filepath.FromSlash(d))
		mode, ok := x.dirMode[d]
		if !ok {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
		t := x.dirTime[d] // zero time for an unlisted directory
		if t.IsZero() {
			t = time.Unix(0, 0)
		}
		if err := os.Chtimes(p, t, t); err != nil {
			return err
		}
	}
	return nil
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
