package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// hostileArchive is a real source archive made hostile in one way that GNU tar would unpack
// into something other than what a hash over the archive's first stream reads (issue 35).
type hostileArchive struct {
	name string
	body []byte
	rule string // words of the refusal
}

// hostileArchives makes, from the real .tar.gz real, one archive per way: the issue's
// multi-member archive (the real entries without the end blocks, then a second gzip member
// that replaces the first file and adds one), bytes after the stream, a "." and a ".."
// segment, a set-user-ID file and a hard link.
func hostileArchives(t *testing.T, real []byte) []hostileArchive {
	t.Helper()
	type entry struct {
		h    *tar.Header
		body []byte
	}
	zr, err := gzip.NewReader(bytes.NewReader(real))
	if err != nil {
		t.Fatal(err)
	}
	var ents []entry
	first := -1
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if first < 0 && h.Typeflag == tar.TypeReg {
			first = len(ents)
		}
		ents = append(ents, entry{h, b})
	}
	top, _, _ := strings.Cut(ents[first].h.Name, "/")
	reg := func(name, body string, mode int64) entry {
		return entry{&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(body))}, []byte(body)}
	}
	pack := func(end bool, list ...entry) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, e := range list {
			h := *e.h
			if err := tw.WriteHeader(&h); err != nil {
				t.Fatal(err)
			}
			tw.Write(e.body)
		}
		if end {
			tw.Close()
		} else {
			tw.Flush()
		}
		zw.Close()
		return buf.Bytes()
	}
	with := func(extra ...entry) []byte { return pack(true, append(append([]entry{}, ents...), extra...)...) }
	victim := ents[first].h.Name
	setuid := append([]entry{}, ents...)
	h := *setuid[first].h
	h.Mode |= 0o4000
	setuid[first] = entry{&h, setuid[first].body}
	return []hostileArchive{
		{"multi-member gzip", append(pack(false, ents...), pack(true, reg(victim, "#error replaced\n", 0o644), reg(top+"/added.c", "int added;\n", 0o644))...),
			"bytes follow the compressed stream"},
		{"bytes after the stream", append(append([]byte{}, real...), "appended"...), "bytes follow the compressed stream"},
		{"dot segment", with(reg(top+"/./"+strings.TrimPrefix(victim, top+"/"), "#error\n", 0o644)), `a "." segment`},
		{"dot-dot segment", with(reg(top+"/x/../"+strings.TrimPrefix(victim, top+"/"), "#error\n", 0o644)), `a ".." segment`},
		{"set-user-ID", pack(true, setuid...), "set-user-ID"},
		{"hard link", with(entry{&tar.Header{Name: top + "/linked", Typeflag: tar.TypeLink, Linkname: victim}, nil}), "a hard link"},
	}
}

// Issue 35, acceptance: `ci check-updates --write` with a mirror that serves zlib-ng's new
// release made hostile in each way refuses that update (exit 3: the others are written),
// naming the file and the rule, and keeps zlib-ng's entry and nothing of the file.
func TestCheckUpdatesRefusesHostileGitArchives(t *testing.T) {
	notInActions(t)
	base := upstreamtest.NewGitScenario(t)
	base.ServeArchives(t)
	ng := base.Repos[lock.ZlibNG]
	file := "zlib-ng-" + ng.New.Version + "-git.tar.gz"
	resp, err := http.Get(base.Upstream.Mirror() + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, h := range hostileArchives(t, real) {
		t.Run(h.name, func(t *testing.T) {
			s := upstreamtest.NewGitScenario(t)
			s.ServeArchives(t)
			s.Upstream.SetFile(file, h.body)
			before := s.LockBytes(t)
			cache := t.TempDir()
			var out, errb bytes.Buffer
			code := run(t.Context(), []string{"check-updates", "--lock", s.LockFile, "--github-api", s.Upstream.GitHubAPI(),
				"--nginx-org", s.Upstream.NginxOrg(), "--mirror", s.Upstream.Mirror(), "--registry", s.Registry, "--cache", cache, "--write"}, &out, &errb)
			if code != exitPartial {
				t.Fatalf("exit %d, want %d\nstderr: %s\nstdout: %s", code, exitPartial, errb.String(), out.String())
			}
			for _, w := range []string{"zlib_ng " + ng.New.Version + ": refused", "archive " + file, h.rule, "nothing from it was used or cached", "fix the mirror"} {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
			if got := entry(t, s.LockBytes(t), lock.ZlibNG); !bytes.Equal(got, entry(t, before, lock.ZlibNG)) {
				t.Errorf("zlib_ng's entry changed:\n%s", got)
			}
			noCachedFile(t, cache, file, ng.New.Tree)
		})
	}
}

// noCachedFile fails if the cache holds the file, or anything under the tree's key.
func noCachedFile(t *testing.T, cache, file, tree string) {
	t.Helper()
	filepath.Walk(cache, func(p string, fi os.FileInfo, err error) error {
		if err == nil && (fi.Name() == file || fi.Name() == tree) {
			t.Errorf("the cache holds %s", p)
		}
		return nil
	})
}
