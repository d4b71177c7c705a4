package unpack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ulikunitz/xz"
)

// ent is one tar entry of a test archive.
type ent struct {
	name, body, link string
	typ              byte
	mode             int64
}

func file(name, body string) ent { return ent{name: name, body: body, typ: tar.TypeReg, mode: 0o644} }
func dirEnt(name string) ent     { return ent{name: name, typ: tar.TypeDir, mode: 0o755} }
func symlink(name, target string) ent {
	return ent{name: name, link: target, typ: tar.TypeSymlink, mode: 0o777}
}
func withMode(e ent, mode int64) ent { e.mode = mode; return e }
func withType(e ent, typ byte) ent   { e.typ = typ; return e }
func hardlink(name, target string) ent {
	return ent{name: name, link: target, typ: tar.TypeLink, mode: 0o644}
}
func tarOf(t testing.TB, ents ...ent) []byte { return tarBytes(t, true, ents...) }

// tarBytes is the uncompressed tar of ents; end adds the two zero blocks that end an archive.
func tarBytes(t testing.TB, end bool, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if !end {
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func xzOf(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := xz.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func extractBytes(t *testing.T, b []byte, lim Limits) (string, Result, error) {
	t.Helper()
	dir := t.TempDir()
	archive := filepath.Join(dir, "src-1.0.tar.gz")
	if err := os.WriteFile(archive, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "tree")
	res, err := Extract(context.Background(), archive, dst, lim)
	return dst, res, err
}

// hostileCases are archives the policy refuses, each with words the refusal must hold. They
// are also the fuzz target's seeds.
func hostileCases(t testing.TB) []struct {
	name    string
	archive []byte
	want    string
} {
	good := []ent{dirEnt("src-1.0/"), file("src-1.0/zlib.h", "the real header\n")}
	replaced := []ent{file("src-1.0/zlib.h", "#error replaced\n"), file("src-1.0/extra.c", "added\n")}
	return []struct {
		name    string
		archive []byte
		want    string
	}{
		// The archive of the issue: the real tar without its end blocks, then a second gzip
		// member that replaces a file and adds one (GNU tar reads both members).
		{"multi-member gzip", concat(gz(t, tarBytes(t, false, good...)), gz(t, tarOf(t, replaced...))), "bytes follow the compressed stream"},
		{"bytes after the stream", concat(gz(t, tarOf(t, good...)), []byte("trailing")), "bytes follow the compressed stream"},
		{"data after the tar's end", gz(t, concat(tarOf(t, good...), tarBytes(t, false, replaced...))), "data follows the tar archive's end"},
		{"xz with a second stream", concat(xzOf(t, tarOf(t, good...)), xzOf(t, tarOf(t, replaced...))), "bytes follow the compressed stream"},
		{"dot segment", gz(t, tarOf(t, append(good, file("src-1.0/./zlib.h", "x"))...)), `a "." segment`},
		{"dot-dot segment", gz(t, tarOf(t, append(good, file("src-1.0/a/../zlib.h", "x"))...)), `a ".." segment`},
		{"escape by dot-dot", gz(t, tarOf(t, append(good, file("src-1.0/../evil", "x"))...)), `a ".." segment`},
		{"absolute name", gz(t, tarOf(t, append(good, file("/etc/evil", "x"))...)), "an absolute or empty name"},
		{"empty segment", gz(t, tarOf(t, append(good, file("src-1.0//zlib.c", "x"))...)), `a "" segment`},
		{"control character", gz(t, tarOf(t, append(good, file("src-1.0/a\x1b[2Jb", "x"))...)), "a control character"},
		{"setuid", gz(t, tarOf(t, append(good, withMode(file("src-1.0/run", "x"), 0o4755))...)), "set-user-ID"},
		{"setgid directory", gz(t, tarOf(t, append(good, withMode(dirEnt("src-1.0/d/"), 0o2755))...)), "set-group-ID"},
		{"sticky", gz(t, tarOf(t, append(good, withMode(dirEnt("src-1.0/d/"), 0o1777))...)), "sticky"},
		{"hard link", gz(t, tarOf(t, append(good, hardlink("src-1.0/h", "src-1.0/zlib.h"))...)), "a hard link"},
		{"fifo", gz(t, tarOf(t, append(good, withType(file("src-1.0/p", ""), tar.TypeFifo))...)), "is not a regular file"},
		{"device", gz(t, tarOf(t, append(good, withType(file("src-1.0/dev", ""), tar.TypeChar))...)), "is not a regular file"},
		{"path twice", gz(t, tarOf(t, append(good, file("src-1.0/zlib.h", "#error"))...)), "appears twice"},
		{"two top directories", gz(t, tarOf(t, append(good, file("other/x", "x"))...)), "outside the archive's one top directory"},
		{"top is a file", gz(t, tarOf(t, file("src-1.0", "x"))), "is not a directory"},
		{"absolute symlink", gz(t, tarOf(t, append(good, symlink("src-1.0/l", "/etc/passwd"))...)), "absolute or empty target"},
		{"symlink out of the tree", gz(t, tarOf(t, append(good, symlink("src-1.0/l", "../../etc"))...)), "leads out of the tree"},
		{"symlink out through another link", gz(t, tarOf(t, append(good, dirEnt("src-1.0/a/"), dirEnt("src-1.0/a/b/"),
			symlink("src-1.0/a/b/up", "../.."), symlink("src-1.0/w", "a/b/up/.."))...)), "leads out of the tree"},
		{"symlink loop", gz(t, tarOf(t, append(good, symlink("src-1.0/l1", "l2"), symlink("src-1.0/l2", "l1"))...)), "too many levels"},
		{"write through a symlink", gz(t, tarOf(t, append(good, symlink("src-1.0/d", "."), file("src-1.0/d/zlib.c", "x"))...)), "which is not a directory"},
		{"below a file", gz(t, tarOf(t, append(good, file("src-1.0/zlib.h/x", "x"))...)), "which is not a directory"},
		// Issue 47: names whose every entry cost work in proportion to their depth squared,
		// and one deeper than mkdir could make: refused from the header.
		{"name too long", gz(t, tarOf(t, append(good, file("src-1.0/"+strings.Repeat("d/", 2500)+"f", "x"))...)), "over the limit of 4096 bytes on a name"},
		{"segment too long", gz(t, tarOf(t, append(good, file("src-1.0/"+strings.Repeat("s", 256), "x"))...)), "a segment of 256 bytes, over the limit of 255 bytes"},
		{"too deep", gz(t, tarOf(t, append(good, file("src-1.0/"+strings.Repeat("d/", 128)+"f", "x"))...)), "130 segments deep, over the limit of 128 segments"},
		// Issue 47: a link's target follows the rules of names.
		{"control character in a symlink target", gz(t, tarOf(t, append(good, symlink("src-1.0/l", "zlib\x1b[2J.h"))...)), "a control character in the symbolic link's target"},
		{"newline in a symlink target", gz(t, tarOf(t, append(good, symlink("src-1.0/l", "zlib.h\nstage ok"))...)), "a control character in the symbolic link's target"},
		{"symlink target segment too long", gz(t, tarOf(t, append(good, symlink("src-1.0/l", strings.Repeat("s", 256)))...)), "a segment of 256 bytes, over the limit of 255 bytes"},
		{"symlink target too long", gz(t, tarOf(t, append(good, symlink("src-1.0/l", strings.Repeat("a/", 2100)))...)), "target of 4200 bytes, over the limit of 4096 bytes"},
		{"not compressed", tarOf(t, good...), "not gzip or xz compressed"},
		{"empty", gz(t, nil), "holds no entries"},
		// Issue 47: directories only hashed to tree 0000... and verified against that pin.
		{"directories only", gz(t, tarOf(t, dirEnt("src-1.0/"), dirEnt("src-1.0/a/"), dirEnt("src-1.0/a/b/"))), "it holds no file"},
		{"not a tar", gz(t, []byte(strings.Repeat("not a tar archive ", 100))), "not a readable tar archive"},
	}
}

func TestExtractRefusesWhatTarWouldWriteDifferently(t *testing.T) {
	for _, c := range hostileCases(t) {
		t.Run(c.name, func(t *testing.T) {
			dst, _, err := extractBytes(t, c.archive, DefaultLimits)
			var ue *Error
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "src-1.0.tar.gz") {
				t.Fatalf("err = %v, want an unpack.Error naming the archive and %q", err, c.want)
			}
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Errorf("%s was left behind: %v", dst, err)
			}
		})
	}
}

// A good archive unpacks to its files (top directory stripped) with their modes and times,
// and packs back to bytes that depend on the files only; the packed archive unpacks to the
// same tree under the same policy.
func TestExtractThenPack(t *testing.T) {
	b := gz(t, tarOf(t, dirEnt("src-1.0/"), withMode(file("src-1.0/configure", "#!/bin/sh\n"), 0o755),
		file("src-1.0/lib/a.c", "int a;\n"), symlink("src-1.0/lib/b.c", "a.c"), symlink("src-1.0/dangling", "generated/x.h")))
	dst, res, err := extractBytes(t, b, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if res.Top != "src-1.0" || res.Entries != 5 || res.Bytes != int64(len("#!/bin/sh\n")+len("int a;\n")) {
		t.Errorf("result %+v", res)
	}
	fi, err := os.Stat(filepath.Join(dst, "configure"))
	if err != nil || fi.Mode().Perm() != 0o755 || !fi.ModTime().Equal(time.Unix(1700000000, 0)) {
		t.Errorf("configure: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "lib", "b.c")); err != nil || l != "a.c" {
		t.Errorf("lib/b.c -> %q, %v", l, err)
	}
	var p1, p2 bytes.Buffer
	if err := Pack(context.Background(), dst, "src-1.0", &p1); err != nil {
		t.Fatal(err)
	}
	dst2, _, err := extractBytes(t, p1.Bytes(), DefaultLimits)
	if err != nil {
		t.Fatalf("the packed archive does not pass the policy: %v", err)
	}
	if err := Pack(context.Background(), dst2, "src-1.0", &p2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p1.Bytes(), p2.Bytes()) {
		t.Error("the same files packed to different bytes")
	}
}

func TestExtractLimits(t *testing.T) {
	ents := []ent{dirEnt("src-1.0/")}
	for _, n := range []string{"a", "b", "c", "d"} {
		ents = append(ents, file("src-1.0/"+n, strings.Repeat("x", 100)))
	}
	b := gz(t, tarOf(t, ents...))
	for _, c := range []struct {
		lim  Limits
		want string
	}{
		{Limits{Entries: 4, EntryBytes: 1000, TotalBytes: 1000}, "more than 4 entries"},
		{Limits{Entries: 100, EntryBytes: 99, TotalBytes: 1000}, "over the limit of 99 bytes for one file"},
		{Limits{Entries: 100, EntryBytes: 100, TotalBytes: 399}, "more than the limit of 399 bytes"},
	} {
		if _, _, err := extractBytes(t, b, c.lim); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.lim, err, c.want)
		}
	}
	if _, _, err := extractBytes(t, b, Limits{Entries: 5, EntryBytes: 100, TotalBytes: 400}); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}

// A cancelled context (SIGINT, SIGTERM or --timeout) ends an unpacking in progress within a
// read: here a file of 200 MiB of zeros that would otherwise be written out.
func TestExtractStopsWhenTheContextEnds(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	const size = 200 << 20
	tw.WriteHeader(&tar.Header{Name: "src-1.0/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: size})
	zero := make([]byte, 1<<20)
	for n := 0; n < size; n += len(zero) {
		tw.Write(zero)
	}
	tw.Close()
	zw.Close()
	dir := t.TempDir()
	archive := filepath.Join(dir, "src-1.0.tar.gz")
	os.WriteFile(archive, buf.Bytes(), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Extract(ctx, archive, filepath.Join(dir, "tree"), DefaultLimits)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("err = %v, want one that says it stopped, wrapping context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tree")); !os.IsNotExist(err) {
		t.Errorf("the tree was left behind: %v", err)
	}
	// Cancelled part way: the written file is far from whole when the error comes back.
	ctx, cancel = context.WithCancel(context.Background())
	r := &cancelAfter{r: bytes.NewReader(buf.Bytes()), n: 64 << 10, cancel: cancel}
	os.Mkdir(filepath.Join(dir, "tree2"), 0o700)
	x, err := newExtraction(ctx, "src-1.0.tar.gz", filepath.Join(dir, "tree2"), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	if err := x.run(r); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if fi, err := os.Stat(filepath.Join(x.dst, "zeros")); err == nil && fi.Size() >= size {
		t.Errorf("the whole file was written after the cancel (%d bytes)", fi.Size())
	}
}

// cancelAfter calls cancel once n bytes were read.
type cancelAfter struct {
	r      *bytes.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n -= k
	if c.n <= 0 {
		c.cancel()
	}
	return k, err
}

// packedHeaders unpacks a packed archive's headers (no policy: the bytes Pack wrote).
func packedHeaders(t *testing.T, b []byte) map[string]*tar.Header {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		out[h.Name] = h
	}
	return out
}

// entAt is an entry with its own modification time, as a hostile mirror serves it.
type entAt struct {
	ent
	at time.Time
}

func tarAt(t *testing.T, ents ...entAt) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, ModTime: e.at, Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return gz(t, buf.Bytes())
}

// Issue 47, item 6: a git tree covers names, bytes, link targets and each file's executable
// bit, nothing else. The same tree served twice, once as git archive writes it and once with
// a mirror's own metadata (modes 0666 and 0777, a far-future time, an empty directory and
// nested empty ones), packs with PackGitTree to one archive: git's modes, the epoch's time,
// no directory without a file below it.
func TestPackGitTreeKeepsOnlyWhatTheTreeCovers(t *testing.T) {
	then, future := time.Unix(1700000000, 0), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(e ent, tm time.Time) entAt { return entAt{e, tm} }
	honest := tarAt(t,
		at(dirEnt("src-1.0/"), then), at(withMode(file("src-1.0/configure", "#!/bin/sh\n"), 0o755), then),
		at(dirEnt("src-1.0/lib/"), then), at(file("src-1.0/lib/a.c", "int a;\n"), then), at(symlink("src-1.0/lib/b.c", "a.c"), then))
	hostile := tarAt(t,
		at(withMode(dirEnt("src-1.0/"), 0o777), future), at(withMode(file("src-1.0/configure", "#!/bin/sh\n"), 0o777), future),
		at(withMode(dirEnt("src-1.0/lib/"), 0o777), then), at(withMode(file("src-1.0/lib/a.c", "int a;\n"), 0o666), future),
		at(symlink("src-1.0/lib/b.c", "a.c"), future),
		at(withMode(dirEnt("src-1.0/empty/"), 0o777), future),
		at(dirEnt("src-1.0/nested/"), then), at(dirEnt("src-1.0/nested/deeper/"), then), at(dirEnt("src-1.0/nested/deeper/still/"), future),
		at(dirEnt("src-1.0/lib/hollow/"), then))
	epoch := time.Unix(1765000000, 0)
	packed := func(b []byte) []byte {
		dst, res, err := extractBytes(t, b, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := PackGitTree(context.Background(), dst, res.Top, epoch, &out); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	got := packed(hostile)
	hs := packedHeaders(t, got)
	want := map[string]int64{"src-1.0/": 0o755, "src-1.0/configure": 0o755, "src-1.0/lib/": 0o755, "src-1.0/lib/a.c": 0o644, "src-1.0/lib/b.c": 0o777}
	for name, mode := range want {
		h := hs[name]
		if h == nil {
			t.Errorf("%s is missing from the packed archive", name)
			continue
		}
		if h.Mode != mode || !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mode %04o time %s owner %d:%d %q:%q, want mode %04o time %s owner 0:0 with no names", name, h.Mode, h.ModTime.UTC(), h.Uid, h.Gid, h.Uname, h.Gname, mode, epoch.UTC())
		}
	}
	if len(hs) != len(want) {
		var names []string
		for n := range hs {
			names = append(names, n)
		}
		t.Errorf("packed entries %q, want exactly the files, links and the directories that hold them", names)
	}
	if !bytes.Equal(got, packed(honest)) {
		t.Error("the same tree with a mirror's own metadata packs to other bytes than git archive's")
	}
	// What PackGitTree wrote passes the policy again and packs to itself.
	if !bytes.Equal(packed(got), got) {
		t.Error("the packed archive, unpacked and packed again, gives other bytes")
	}
}

// Pack, for an archive checked by its SHA-256, keeps what the digest covers: the archive's
// own modes and times, and its empty directories.
func TestPackKeepsWhatTheDigestCovers(t *testing.T) {
	future := time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC) // within every file system's range
	b := tarAt(t, entAt{dirEnt("src-1.0/"), future}, entAt{withMode(file("src-1.0/a.c", "int a;\n"), 0o666), future},
		entAt{dirEnt("src-1.0/empty/"), future})
	dst, res, err := extractBytes(t, b, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Pack(context.Background(), dst, res.Top, &out); err != nil {
		t.Fatal(err)
	}
	hs := packedHeaders(t, out.Bytes())
	if h := hs["src-1.0/a.c"]; h == nil || h.Mode != 0o666 || !h.ModTime.Equal(future) {
		t.Errorf("src-1.0/a.c: %+v, want mode 0666 and its own time", h)
	}
	if hs["src-1.0/empty/"] == nil {
		t.Error("the empty directory the digest covers was dropped")
	}
}
