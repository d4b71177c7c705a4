//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// withMirrorMetadata rewrites a git archive as a mirror that chose its own metadata would
// serve it: every time in 2300, files 0666 (0777 when git's tree makes them executable, so
// the tree is unchanged), directories 0777, and an empty directory and nested empty ones the
// tree has no entry for. The names, bytes and link targets are the real ones: the archive
// still hashes to the pinned tree.
func withMirrorMetadata(t *testing.T, real []byte, top string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(real))
	if err != nil {
		t.Fatal(err)
	}
	future := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	write := func(h *tar.Header, body io.Reader) {
		h.Format, h.ModTime, h.AccessTime, h.ChangeTime = tar.FormatPAX, future, time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeXGlobalHeader:
			continue
		case tar.TypeDir:
			h.Mode = 0o777
		case tar.TypeReg:
			exec := h.Mode&0o100 != 0 // the one bit of a mode git's tree records
			h.Mode = 0o666
			if exec {
				h.Mode = 0o777
			}
		}
		write(h, tr)
	}
	for _, d := range []string{"empty/", "nested/", "nested/deeper/", "nested/deeper/still/"} {
		write(&tar.Header{Name: top + "/" + d, Typeflag: tar.TypeDir, Mode: 0o777}, strings.NewReader(""))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// failVersionCheck puts a cc first on PATH whose --version fails (anything else runs the real
// cc: the tool check asks it where libraries are): the host engine asks the version after
// every prepared archive was checked (engine.CheckSources) and before the first stage, so a
// build stops there with its sources prepared and nothing compiled.
func failVersionCheck(t *testing.T) {
	t.Helper()
	real, err := exec.LookPath("cc")
	if err != nil {
		testenv.Missing(t, "cc", "apt-get install build-essential")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then\n  echo 'cc: stopped by the test before any stage' >&2\n  exit 3\nfi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "cc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Issue 47, item 6, through the command line: `ci build --engine host` of the test lock, its
// git-pinned nginx served by a mirror with metadata of its own choosing (withMirrorMetadata:
// modes 0666 and 0777, a time in 2300, empty directories) that still hashes to the pinned
// tree. The archive the stages read (the prepared archive, which each stage copies and
// checks against the digest the build checked, engine.PrivateSource) is the same file, byte
// for byte, as the one git archive's own bytes prepare to: git's modes (0644, 0755 for
// executables and directories), every time the lock's source_date_epoch, no empty directory.
// No compiler runs (failVersionCheck): the build stops before its first stage.
func TestBuildNormalisesWhatAGitTreeDoesNotCover(t *testing.T) {
	mirror := testenv.MirrorDir(t)
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	nginx := l.MustComponent(lock.Nginx)
	if nginx.Git == nil {
		t.Fatalf("the test lock's nginx is not pinned by its git tree: the test's premise")
	}
	file, top := nginx.FileName(), "nginx-"+nginx.Version
	real, err := os.ReadFile(filepath.Join(mirror, file))
	if err != nil {
		testenv.Missing(t, file+" in the mirror", "run .ci/fetch-sources again (it copies ../shared/upstream's archives)")
	}
	failVersionCheck(t)
	files := http.FileServer(http.Dir(mirror))
	build := func(body []byte) string {
		t.Helper()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/"+file {
				w.Write(body)
				return
			}
			files.ServeHTTP(w, r)
		}))
		defer srv.Close()
		dir := t.TempDir()
		cache := filepath.Join(dir, "cache")
		code, stdout, stderr := runWithin(t, 5*time.Minute, "build", "--engine", "host", "--no-smoke",
			"--lock", testenv.TestLockPath(), "--mirror", srv.URL, "--cache", cache, "--tree", filepath.Join(dir, "tree"))
		if code != 1 || !strings.Contains(stderr, "running `cc --version`: exit status 3") {
			t.Fatalf("exit %d, want 1 at the compiler's version check\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(cache, "stages")); !os.IsNotExist(err) {
			t.Fatalf("a stage ran: %v", err)
		}
		found, _ := filepath.Glob(filepath.Join(cache, "sources", "prepared", "*.tar.gz"))
		for _, p := range found {
			if hs := tarHeaders(t, p); len(hs) > 0 && hs[0].Name == top+"/" {
				return p
			}
		}
		t.Fatalf("no prepared archive of %s among %q", top, found)
		return ""
	}
	honest := build(real)
	got := build(withMirrorMetadata(t, real, top))
	if filepath.Base(got) != filepath.Base(honest) {
		t.Errorf("the stages read %s from the mirror's metadata, %s from git archive's: one tree and epoch, two archives", filepath.Base(got), filepath.Base(honest))
	}
	epoch := time.Unix(l.SourceDateEpoch, 0)
	bad := 0
	for _, h := range tarHeaders(t, got) {
		want := int64(0o644)
		switch {
		case h.Typeflag == tar.TypeDir, h.Typeflag == tar.TypeReg && h.Mode&0o100 != 0:
			want = 0o755
		case h.Typeflag == tar.TypeSymlink:
			want = 0o777
		}
		if h.Mode != want || !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || strings.HasPrefix(h.Name, top+"/empty/") || strings.HasPrefix(h.Name, top+"/nested/") {
			if bad++; bad > 5 {
				continue // the first few say what is wrong
			}
			t.Errorf("the stages read %s with mode %04o, time %s, owner %d:%d; want mode %04o, time %s (the lock's source_date_epoch), owner 0:0, and no empty directory",
				h.Name, h.Mode, h.ModTime.UTC(), h.Uid, h.Gid, want, epoch.UTC())
		}
	}
	if bad > 5 {
		t.Errorf("and %d more entries like them", bad-5)
	}
}

// tarHeaders lists a .tar.gz's headers.
func tarHeaders(t *testing.T, file string) []*tar.Header {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []*tar.Header
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
}
