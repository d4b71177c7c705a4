package source_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/gittree"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// metaEntry is one entry of an archive whose metadata a test chooses.
type metaEntry struct {
	name, body, link string
	typ              byte
	mode             int64
	at               time.Time
}

func metaArchive(t *testing.T, ents ...metaEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
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
	zw.Close()
	return buf.Bytes()
}

// zlibNGArchives are one tree as git archive writes it and as a hostile mirror serves it:
// modes 0777 and 0666, a far-future time, an empty directory and nested empty ones; the same
// names, bytes, link targets and executable bits, so the same git tree.
func zlibNGArchives(t *testing.T) (honest, hostile []byte) {
	then, future := time.Unix(1727740800, 0), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	const top = "zlib-ng-2.2.2/"
	honest = metaArchive(t,
		metaEntry{name: top, typ: tar.TypeDir, mode: 0o775, at: then},
		metaEntry{name: top + "configure", body: "#!/bin/sh\n", typ: tar.TypeReg, mode: 0o775, at: then},
		metaEntry{name: top + "zlib.h", body: "/* zlib-ng */\n", typ: tar.TypeReg, mode: 0o664, at: then},
		metaEntry{name: top + "zconf.h", link: "zlib.h", typ: tar.TypeSymlink, mode: 0o777, at: then})
	hostile = metaArchive(t,
		metaEntry{name: top, typ: tar.TypeDir, mode: 0o777, at: future},
		metaEntry{name: top + "configure", body: "#!/bin/sh\n", typ: tar.TypeReg, mode: 0o777, at: future},
		metaEntry{name: top + "zlib.h", body: "/* zlib-ng */\n", typ: tar.TypeReg, mode: 0o666, at: future},
		metaEntry{name: top + "zconf.h", link: "zlib.h", typ: tar.TypeSymlink, mode: 0o777, at: future},
		metaEntry{name: top + "empty/", typ: tar.TypeDir, mode: 0o777, at: future},
		metaEntry{name: top + "a/", typ: tar.TypeDir, mode: 0o700, at: then},
		metaEntry{name: top + "a/b/", typ: tar.TypeDir, mode: 0o777, at: future})
	return honest, hostile
}

// treeOf is the git tree of an archive's files.
func treeOf(t *testing.T, archive []byte) string {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "a.tar.gz")
	os.WriteFile(f, archive, 0o644)
	if _, err := unpack.Extract(context.Background(), f, filepath.Join(dir, "tree"), unpack.DefaultLimits); err != nil {
		t.Fatal(err)
	}
	id, err := gittree.OfDir(context.Background(), filepath.Join(dir, "tree"))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// preparedFrom fetches c from a mirror serving archive, into a cache of its own, and returns
// the prepared archive's bytes.
func preparedFrom(t *testing.T, c lock.Component, archive []byte, opts ...source.Option) []byte {
	t.Helper()
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(archive) }))
	v, err := fastFetcher(t, t.TempDir(), url, opts...).Fetch(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(v.Prepared)
	if err != nil {
		t.Fatal(err)
	}
	if want := upstreamtest.SHA256(b) + ".tar.gz"; filepath.Base(v.Prepared) != want {
		t.Fatalf("prepared archive %s is not named after its digest %s", v.Prepared, want)
	}
	return b
}

// Issue 47, item 6, and why the host engine's stage key (pipeline/engine/host stageKey) holds
// the pin and the epoch but not the prepared archive's digest: for a git-pinned source the
// prepared archive is a function of the pin and the epoch alone. The same tree served with
// git archive's metadata and with a hostile mirror's (modes 0777 and 0666, a time in 2300, an
// empty directory and nested empty ones) prepares to the same bytes: git's modes, every time
// the epoch, no empty directory. Another epoch gives other bytes (the key holds it too).
func TestGitSourcePreparedArchiveIsAFunctionOfThePinAndTheEpoch(t *testing.T) {
	honest, hostile := zlibNGArchives(t)
	tree := treeOf(t, honest)
	if got := treeOf(t, hostile); got != tree {
		t.Fatalf("the hostile archive's tree %s is not the honest one's %s: the test's premise", got, tree)
	}
	c := lock.Component{Name: lock.ZlibNG, Version: "2.2.2", Unsigned: "a test stand-in",
		Git: &lock.Git{Repository: "https://example.org/zlib-ng/zlib-ng.git", Commit: strings.Repeat("1", 40), Tree: tree}}
	const epoch = 1765000000
	fromHonest := preparedFrom(t, c, honest, source.WithSourceDateEpoch(epoch))
	fromHostile := preparedFrom(t, c, hostile, source.WithSourceDateEpoch(epoch))
	if !bytes.Equal(fromHonest, fromHostile) {
		t.Errorf("one pin and epoch, archives differing only in what the tree does not cover: prepared %s and %s",
			upstreamtest.SHA256(fromHonest), upstreamtest.SHA256(fromHostile))
	}
	want := map[string]int64{"zlib-ng-2.2.2/": 0o755, "zlib-ng-2.2.2/configure": 0o755, "zlib-ng-2.2.2/zlib.h": 0o644, "zlib-ng-2.2.2/zconf.h": 0o777}
	got := headers(t, fromHostile)
	for name, h := range got {
		if mode, ok := want[name]; !ok || h.Mode != mode || h.ModTime.Unix() != epoch {
			t.Errorf("prepared %s: mode %04o time %s (listed %v), want only %v at mode 0755/0644/0777 and time %d", name, h.Mode, h.ModTime.UTC(), ok, want, epoch)
		}
	}
	if len(got) != len(want) {
		t.Errorf("prepared entries %d, want %d", len(got), len(want))
	}
	if other := preparedFrom(t, c, honest, source.WithSourceDateEpoch(epoch+1)); bytes.Equal(other, fromHonest) {
		t.Error("another epoch prepared the same bytes: the epoch is not what the times come from")
	}
}

// A source pinned by its SHA-256 keeps its archive's metadata: the digest covers every byte
// upstream published, modes, times and empty directories with them. Its prepared archive is
// what unpack.Pack writes of the files, whatever the epoch, as it was before git-pinned
// sources were normalised (so every cache built on it stays warm).
func TestSHA256SourceKeepsItsArchivesMetadata(t *testing.T) {
	_, hostile := zlibNGArchives(t)
	c := lock.Component{Name: lock.Zlib, Version: "1.3.1", URL: "https://example.org/zlib-ng-2.2.2.tar.gz",
		SHA256: upstreamtest.SHA256(hostile), Unsigned: "a test stand-in"}
	got := preparedFrom(t, c, hostile, source.WithSourceDateEpoch(1765000000))
	if other := preparedFrom(t, c, hostile, source.WithSourceDateEpoch(1)); !bytes.Equal(got, other) {
		t.Error("the epoch changed a SHA-256-pinned source's prepared archive")
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "a.tar.gz")
	os.WriteFile(f, hostile, 0o644)
	res, err := unpack.Extract(context.Background(), f, filepath.Join(dir, "tree"), unpack.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var packed bytes.Buffer
	if err := unpack.Pack(context.Background(), filepath.Join(dir, "tree"), res.Top, &packed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, packed.Bytes()) {
		t.Error("a SHA-256-pinned source's prepared archive is not unpack.Pack's of its files")
	}
	hs := headers(t, got)
	if h := hs["zlib-ng-2.2.2/zlib.h"]; h == nil || h.Mode != 0o666 {
		t.Errorf("zlib.h: %+v, want its archive's mode 0666", h)
	}
	if hs["zlib-ng-2.2.2/empty/"] == nil || hs["zlib-ng-2.2.2/a/b/"] == nil {
		t.Error("the empty directories the digest covers were dropped")
	}
}

func headers(t *testing.T, archive []byte) map[string]*tar.Header {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}
