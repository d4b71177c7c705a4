package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func testLock(t testing.TB) *lock.Lock {
	t.Helper()
	l, err := lock.Load(testenv.TrixieLockPath())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// syntheticTree writes a small install tree honouring the runtime contract. mtime and
// perm differences between calls must not change the layer. reverse creates the files in
// the opposite order (directory order on disk then differs).
func syntheticTree(t testing.TB, mtime time.Time, umaskish os.FileMode, reverse bool) string {
	t.Helper()
	dir := t.TempDir()
	files := []struct {
		path string
		body string
		exec bool
	}{
		{"usr/sbin/nginx", "\x7fELF not really nginx, but executable\n", true},
		{"etc/nginx/nginx.conf", "worker_processes auto;\nevents {}\n", false},
		{"etc/nginx/mime.types", "types { text/html html; }\n", false},
		{"usr/share/nginx/html/index.html", "<h1>nginx-forge</h1>\n", false},
	}
	dirs := []string{"etc/nginx/conf.d", "etc/nginx/tls", "var/cache/nginx", "run/nginx"}
	if reverse {
		for i, j := 0, len(files)-1; i < j; i, j = i+1, j-1 {
			files[i], files[j] = files[j], files[i]
		}
		for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
			dirs[i], dirs[j] = dirs[j], dirs[i]
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755&^umaskish); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755&^umaskish); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if f.exec {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(f.body), mode&^umaskish|0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode&^umaskish|0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("nginx.conf", filepath.Join(dir, "etc/nginx/default.conf")); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode()&os.ModeSymlink == 0 {
			os.Chtimes(p, mtime, mtime)
		}
		return nil
	})
	return dir
}

// syntheticBase is a fixed, tiny OCI base (so golden files do not move with Debian's
// package updates); tests that need a base that runs things use basetest.
func syntheticBase(t testing.TB, arch string) v1.Image {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etc"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), 0o644)
	l, err := TreeLayer(dir, WithModTime(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: l, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: time.Unix(0, 0).UTC()}, CreatedBy: "synthetic base"}})
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.User = "65532"
	cf.Config.WorkingDir = "/home/nonroot"
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// syntheticDebianBase is syntheticBase with a second layer holding what the SBOM reads of a
// distroless base: os-release and a dpkg database in distroless's status.d form (one stanza
// file per package, beside md5sums files that are not packages). libstdc++6 is not in
// distroless base-nossl; it is here for its '+', which an SPDX ID cannot hold.
func syntheticDebianBase(t testing.TB, arch string) v1.Image {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"usr/lib/os-release":                   "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"13\"\nID=debian\n",
		"var/lib/dpkg/status.d/base-files":     "Package: base-files\nVersion: 13.8+deb13u1\nArchitecture: " + arch + "\nMaintainer: Santiago Vila <sanvila@debian.org>\n",
		"var/lib/dpkg/status.d/libc6":          "Package: libc6\nSource: glibc\nVersion: 2.41-12\nArchitecture: " + arch + "\nDescription: GNU C Library: Shared libraries\n Contains the standard libraries.\n",
		"var/lib/dpkg/status.d/libc6.md5sums":  "0123 lib/x86_64-linux-gnu/libc.so.6\n",
		"var/lib/dpkg/status.d/libstdc++6":     "Package: libstdc++6\nSource: gcc-14 (14.2.0-19)\nVersion: 14.2.0-19\nArchitecture: " + arch + "\n",
		"var/lib/dpkg/status.d/tzdata":         "Package: tzdata\nVersion: 2025b-4+deb13u1\nArchitecture: all\n",
		"var/lib/dpkg/status.d/tzdata.md5sums": "",
		// Copyright files of the three kinds the SBOM reads: machine-readable (DEP-5) with
		// SPDX-listed names, DEP-5 with a licence of its own (whose text the file gives),
		// and free-form; tzdata has none.
		"usr/share/doc/base-files/copyright": "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n" +
			"Files: *\nCopyright: Santiago Vila\nLicense: GPL-2+\n On Debian systems, see /usr/share/common-licenses/GPL-2.\n",
		"usr/share/doc/libc6/copyright": "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n" +
			"Files: *\nCopyright: Free Software Foundation, Inc.\nLicense: LGPL-2.1+\n\n" +
			"Files: inet/*\nCopyright: Carnegie Mellon University\nLicense: Carnegie and LGPL-2.1+\n\n" +
			"Files: posix/tst-*\nLicense: BSD-2-clause or GPL-2\n\n" +
			"License: Carnegie\n Permission to use, copy, modify and distribute this software.\n .\n CMU ALLOWS FREE USE.\n",
		"usr/share/doc/libstdc++6/copyright": "This is the Debian GNU/Linux prepackaged version of the GNU compiler collection.\n",
	}
	for p, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := TreeLayer(dir, WithModTime(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(syntheticBase(t, arch), mutate.Addendum{Layer: l, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: time.Unix(0, 0).UTC()}, CreatedBy: "synthetic dpkg database"}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// forkSource is the repository the synthetic image says it is built from: a fork's, not
// this project's, so the goldens show a label that came from the options.
const forkSource = "https://github.com/acme/edge-nginx"

func assembleSynthetic(t testing.TB, arch string, opts ...Option) v1.Image {
	t.Helper()
	return assembleOn(t, syntheticBase(t, arch), opts...)
}

func assembleOn(t testing.TB, base v1.Image, opts ...Option) v1.Image {
	t.Helper()
	tree := syntheticTree(t, time.Now(), 0, false)
	opts = append([]Option{WithBaseRef("gcr.io/distroless/base-nossl-debian13:nonroot"), WithSource(forkSource), WithRevision("0123456789abcdef0123456789abcdef01234567"), WithLibcrypt("1:4.4.33-2"), WithOptimize("lto")}, opts...)
	img, err := Assemble(base, tree, testLock(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading golden file (regenerate with `go test ./pipeline/image -update`): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s drifted (if intended, regenerate with `go test ./pipeline/image -update`)\n--- got ---\n%s\n--- want ---\n%s", p, got, want)
	}
}

func indent(t testing.TB, raw []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return append(out, '\n')
}

// layerEntries reads the headers of the image's last layer.
func layerEntries(t testing.TB, img v1.Image) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h
	}
}

// countingRegistry is the in-process registry with a record of the requests it served.
type countingRegistry struct {
	Host string
	mu   sync.Mutex
	reqs []string
}

func newInProcessRegistry(t testing.TB) *countingRegistry {
	t.Helper()
	c := &countingRegistry{}
	reg := registry.New(registry.Logger(nopLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.reqs = append(c.reqs, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.Host = strings.TrimPrefix(srv.URL, "http://")
	return c
}

func (c *countingRegistry) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.reqs...)
}

func (c *countingRegistry) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = nil
}

// quick is for tests: anonymous, short retries.
func quick(extra ...Option) []Option {
	return append([]Option{
		WithKeychain(authn.NewMultiKeychain()),
		withRetryBackoff(remote.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 3}),
	}, extra...)
}

func headDigest(t testing.TB, ref string) string {
	t.Helper()
	r, err := parseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(r, remote.WithContext(context.Background()))
	if err != nil {
		return "absent (" + err.Error() + ")"
	}
	return d.Digest.String()
}

func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func parseRef(s string) (name.Reference, error) { return name.ParseReference(s) }
