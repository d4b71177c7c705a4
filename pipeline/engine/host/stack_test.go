//go:build integration

package host_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The acceptance tests of the real build: the whole stack compiled by the host executor from
// the test lock's real tarballs (testenv.BuiltTree, shared with every other package through
// the build cache), then checked as the image will run it.

func nginxBin(tree string) string { return filepath.Join(tree, "usr", "sbin", "nginx") }

func testLock(t *testing.T) *lock.Lock {
	t.Helper()
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestBuiltNginxVersionAndModules(t *testing.T) {
	tree := testenv.BuiltTree(t)
	out, err := exec.Command(nginxBin(tree), "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -V: %v\n%s", err, out)
	}
	v := string(out)
	t.Logf("nginx -V:\n%s", v)
	l := testLock(t)
	for _, want := range []string{
		"nginx version: nginx/" + l.MustComponent(lock.Nginx).Version + "\n",
		"built with OpenSSL " + l.MustComponent(lock.OpenSSL).Version + " ",
		"TLS SNI support enabled",
		"--prefix=/etc/nginx", "--sbin-path=/usr/sbin/nginx", "--conf-path=/etc/nginx/nginx.conf",
		"--error-log-path=/dev/stderr", "--http-log-path=/dev/stdout", "--pid-path=/run/nginx/nginx.pid",
		"--http-client-body-temp-path=/var/cache/nginx/client_body",
		"-fstack-protector-strong", "-D_FORTIFY_SOURCE=3", "-march=x86-64-v3",
		"-Wl,-z,relro,-z,now", "-l:libcrypt.a",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("nginx -V lacks %q", want)
		}
	}
	for _, m := range plan.DefaultModules {
		mod, _ := lookupModule(m)
		if !strings.Contains(v, mod+" ") {
			t.Errorf("nginx -V lacks module flag %s", mod)
		}
	}
	if strings.Contains(v, "--with-mail") {
		t.Error("mail is compiled in")
	}
	// Built against the static OpenSSL (3.5.7), not the host's libssl, and running with it:
	// nginx prints "(running with OpenSSL X)" only when the two differ.
	if strings.Contains(v, "running with") {
		t.Errorf("nginx runs with another OpenSSL than it was built with:\n%s", v)
	}
	// The configure line is compiled into the binary: no executor path may appear in it.
	for _, bad := range []string{testenv.BuildCacheDir(), "/tmp/", "DEP_", "ffile-prefix-map"} {
		if strings.Contains(v, bad) {
			t.Errorf("nginx -V mentions %q", bad)
		}
	}
}

func lookupModule(name string) (string, bool) {
	for _, m := range plan.Modules {
		if m.Name == name {
			return m.Flag, true
		}
	}
	return "", false
}

// TestBuiltNginxNeedsOnlyLibc reads the ELF dynamic section: the binary must need only the
// libc family (static OpenSSL, PCRE2, zlib and libcrypt), be PIE with full RELRO and a
// non-executable stack, and be stripped.
func TestBuiltNginxNeedsOnlyLibc(t *testing.T) {
	tree := testenv.BuiltTree(t)
	f, err := elf.Open(nginxBin(tree))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("DT_NEEDED: %v", libs)
	allowed := map[string]bool{"libc.so.6": true, "libm.so.6": true, "libpthread.so.0": true, "libdl.so.2": true,
		"ld-linux-x86-64.so.2": true, "ld-linux-aarch64.so.1": true}
	for _, l := range libs {
		if !allowed[l] {
			t.Errorf("nginx needs %s: only the libc family is allowed (libcrypt, libpcre2, libssl, libz must be static)", l)
		}
	}
	if !slices.Contains(libs, "libc.so.6") {
		t.Errorf("nginx does not link libc.so.6 dynamically: %v", libs)
	}
	syms, _ := f.ImportedSymbols()
	for _, s := range syms {
		if s.Name == "crypt" || s.Name == "crypt_r" || strings.HasPrefix(s.Name, "pcre2_") || strings.HasPrefix(s.Name, "SSL_") {
			t.Errorf("nginx imports %s from %q at run time", s.Name, s.Library)
		}
	}

	if f.Type != elf.ET_DYN {
		t.Errorf("ELF type %v, want ET_DYN (PIE)", f.Type)
	}
	flags1, _ := dynValue(f, elf.DT_FLAGS_1)
	flags, _ := dynValue(f, elf.DT_FLAGS)
	if flags1&uint64(elf.DF_1_PIE) == 0 {
		t.Errorf("DT_FLAGS_1 %#x lacks DF_1_PIE", flags1)
	}
	if flags1&uint64(elf.DF_1_NOW) == 0 && flags&uint64(elf.DF_BIND_NOW) == 0 {
		t.Errorf("not linked with -z now (DT_FLAGS %#x, DT_FLAGS_1 %#x)", flags, flags1)
	}
	var relro, stack bool
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_GNU_RELRO:
			relro = true
		case elf.PT_GNU_STACK:
			stack = true
			if p.Flags&elf.PF_X != 0 {
				t.Error("the stack is executable")
			}
		}
	}
	if !relro || !stack {
		t.Errorf("PT_GNU_RELRO %v, PT_GNU_STACK %v", relro, stack)
	}
	if _, err := dynValue(f, elf.DT_RUNPATH); err == nil {
		t.Error("nginx has a RUNPATH")
	}
	if _, err := dynValue(f, elf.DT_RPATH); err == nil {
		t.Error("nginx has an RPATH")
	}
	if syms, err := f.Symbols(); err == nil && len(syms) > 0 {
		t.Errorf("nginx is not stripped (%d symbols)", len(syms))
	}
}

func dynValue(f *elf.File, tag elf.DynTag) (uint64, error) {
	v, err := f.DynValue(tag)
	if err != nil {
		return 0, err
	}
	if len(v) == 0 {
		return 0, fmt.Errorf("no %v", tag)
	}
	return v[0], nil
}

// TestBuiltNginxHasPCREJITAndNoBuildPaths looks inside the binary: the JIT code path of
// nginx's regex module is compiled in (its messages exist only under NGX_HAVE_PCRE_JIT), and
// no path of the build machine (cache, scratch directories) or build flag leaked into it.
func TestBuiltNginxHasPCREJITAndNoBuildPaths(t *testing.T) {
	tree := testenv.BuiltTree(t)
	b, err := os.ReadFile(nginxBin(tree))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("nginx binary: %d bytes", len(b))
	if !bytes.Contains(b, []byte("pcre2_jit_compile() failed")) {
		t.Error("nginx was built without PCRE2 JIT support (NGX_HAVE_PCRE_JIT)")
	}
	if !bytes.Contains(b, []byte("OpenSSL 3.5.7")) {
		t.Error("the static OpenSSL's version string is not in the binary")
	}
	for _, bad := range []string{testenv.BuildCacheDir(), "nginx-forge/build", "/tmp/", "ffile-prefix-map", testenv.RepoRoot()} {
		if bytes.Contains(b, []byte(bad)) {
			i := bytes.Index(b, []byte(bad))
			lo, hi := max(0, i-80), min(len(b), i+80)
			t.Errorf("the binary contains the build path or flag %q: ...%q...", bad, b[lo:hi])
		}
	}
}

// TestBuiltTreeLayout checks the install tree against the runtime contract.
func TestBuiltTreeLayout(t *testing.T) {
	tree := testenv.BuiltTree(t)
	l := testLock(t)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	ng, _ := p.Stage(lock.Nginx)
	shipped := map[string][]byte{}
	for _, f := range ng.Files {
		shipped[f.Path] = f.Data
	}
	for _, c := range []struct {
		path string
		dir  bool
		mode os.FileMode
		want []byte
	}{
		{"usr/sbin/nginx", false, 0o755, nil},
		{"etc/nginx/nginx.conf", false, 0o644, shipped["files/nginx.conf"]},
		{"etc/nginx/mime.types", false, 0o644, nil},
		{"etc/nginx/conf.d", true, 0o755, nil},
		{"etc/nginx/tls", true, 0o755, nil},
		{"usr/share/nginx/html/index.html", false, 0o644, shipped["files/index.html"]},
		{"var/cache/nginx", true, 0o755, nil},
		{"run/nginx", true, 0o755, nil},
	} {
		fi, err := os.Lstat(filepath.Join(tree, c.path))
		if err != nil {
			t.Errorf("install tree lacks %s: %v", c.path, err)
			continue
		}
		if fi.IsDir() != c.dir || fi.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v, want dir=%v %v", c.path, fi.Mode(), c.dir, c.mode)
		}
		if c.want != nil {
			b, _ := os.ReadFile(filepath.Join(tree, c.path))
			if !bytes.Equal(b, c.want) {
				t.Errorf("%s differs from the shipped file (pipeline/plan/files)", c.path)
			}
		}
		if got := fi.ModTime().Unix(); got != l.SourceDateEpoch {
			t.Errorf("%s mtime %d, want SOURCE_DATE_EPOCH %d", c.path, got, l.SourceDateEpoch)
		}
	}
	for _, absent := range []string{"dev", "etc/nginx/html", "etc/nginx/nginx.conf.default", "usr/lib", "usr/include"} {
		if _, err := os.Lstat(filepath.Join(tree, absent)); err == nil {
			t.Errorf("install tree has %s", absent)
		}
	}
	checkLicenses(t, tree, l, p)
	var total int64
	filepath.Walk(tree, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	t.Logf("install tree: %d bytes", total)
}

// TestBuiltNginxConfigTest runs `nginx -t` on the shipped configuration the way the image
// runs nginx: the tree as the root file system (plus the host's libc, which the runtime base
// image provides), as user 65532, with the compiled-in paths. A private mount namespace keeps
// the bind mounts away from the host.
func TestBuiltNginxConfigTest(t *testing.T) {
	testenv.Root(t)
	unshare := testenv.Tool(t, "unshare", "util-linux")
	testenv.Tool(t, "chroot", "coreutils")
	tree := testenv.BuiltTree(t)
	root := imageRoot(t, tree)
	out, err := nginxT(unshare, root)
	t.Logf("nginx -t:\n%s", out)
	if err != nil {
		t.Fatalf("nginx -t on the shipped configuration failed: %v\n%s", err, out)
	}
	for _, want := range []string{"the configuration file /etc/nginx/nginx.conf syntax is ok", "configuration file /etc/nginx/nginx.conf test is successful"} {
		if !strings.Contains(out, want) {
			t.Errorf("nginx -t output lacks %q", want)
		}
	}

	// The harness can fail: a broken nginx.conf is reported as such.
	conf := filepath.Join(root, "etc", "nginx", "nginx.conf")
	b, _ := os.ReadFile(conf)
	if err := os.WriteFile(conf, append(b, []byte("\nnginx_forge_no_such_directive on;\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = nginxT(unshare, root)
	if err == nil || !strings.Contains(out, `unknown directive "nginx_forge_no_such_directive"`) {
		t.Errorf("nginx -t accepted a broken configuration: %v\n%s", err, out)
	}
}

// nginxT runs /usr/sbin/nginx -t chrooted into root as 65532, in a private mount namespace
// where root has the host's /dev, /proc and (read-only) library directories.
func nginxT(unshare, root string) (string, error) {
	script := `set -eu
root=$1
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
for d in /usr/lib /usr/lib64; do
  if [ -d "$d" ] && [ ! -L "$d" ]; then mkdir -p "$root$d"; mount --bind "$d" "$root$d"; mount -o remount,bind,ro "$root$d"; fi
done
# As runc does for a container's user: hand stdio to 65532, so that nginx can open
# /dev/stderr and /dev/stdout (its compiled-in log paths) through /proc/self/fd.
chown 65532:65532 /proc/self/fd/1 /proc/self/fd/2
exec chroot --userspec=65532:65532 "$root" /usr/sbin/nginx -t
`
	out, err := exec.Command(unshare, "--mount", "--propagation", "private", "bash", "-c", script, "bash", root).CombinedOutput()
	return string(out), err
}

// imageRoot copies the install tree into a new directory laid out as the image's root file
// system, with the users of a distroless base and the host's library directories as symlinks
// or mount points.
func imageRoot(t *testing.T, tree string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := host.CopyTree(root, tree); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"dev", "proc", "tmp", "etc", "usr/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Merged /usr: /lib, /lib64 (and /bin) are symlinks into /usr on Debian and in distroless.
	for _, d := range []string{"/lib", "/lib64", "/lib32"} {
		if target, err := os.Readlink(d); err == nil {
			os.Symlink(target, filepath.Join(root, d))
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group":  "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Writable by the image's user, as the image and its tmpfs mounts make them.
	for _, d := range []string{"var/cache/nginx", "run/nginx", "tmp"} {
		if err := os.Chown(filepath.Join(root, d), 65532, 65532); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// sourcesFor fetches (from the loopback mirror, into the shared cache) and verifies the test
// lock's tarballs.
func sourcesFor(t *testing.T, l *lock.Lock) map[string]string {
	t.Helper()
	f := source.New(source.WithMirror(testenv.Mirror(t)), source.WithCacheDir(filepath.Join(testenv.BuildCacheDir(), "sources")))
	v, err := f.FetchAll(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for name, x := range v {
		m[name] = x.Prepared
	}
	return m
}

// TestRebuildWithNothingChangedIsCached: a second build of the same plan takes every stage
// from the cache and gives the same tree.
func TestRebuildWithNothingChangedIsCached(t *testing.T) {
	tree := testenv.BuiltTree(t)
	l := testLock(t)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	var lg logs
	start := time.Now()
	res, err := host.New(host.WithCacheDir(testenv.BuildCacheDir()), host.WithProgress(&lg)).Run(context.Background(), p, sourcesFor(t, l))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second build: %s\n%s", time.Since(start).Round(time.Millisecond), lg.String())
	for _, s := range res.Stages {
		if !s.Cached {
			t.Errorf("stage %s was rebuilt with nothing changed", s.Name)
		}
		t.Logf("stage %s: cached; its build took %s wall, %s user, %s sys", s.Name, s.Built.Wall.Round(time.Second), s.Built.User.Round(time.Second), s.Built.Sys.Round(time.Second))
	}
	if res.Tree != tree {
		t.Errorf("tree %s, BuiltTree gave %s", res.Tree, tree)
	}
}

// TestNginxOnlyChangeRebuildsOnlyNginx changes nothing but the nginx stage (an extra,
// unused environment variable) and checks that only nginx is rebuilt, from the results and
// the stage logs, and that the rebuilt binary is byte-identical to the cached one although
// it was built in other directories: the build is reproducible. It compiles nginx again
// (about 2 minutes of CPU), so -short skips it.
func TestNginxOnlyChangeRebuildsOnlyNginx(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: it recompiles nginx")
	}
	tree := testenv.BuiltTree(t)
	l := testLock(t)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Stages {
		if p.Stages[i].Name == lock.Nginx {
			p.Stages[i].Env = append(p.Stages[i].Env, plan.EnvVar{Name: "NGINX_FORGE_TEST_VARIANT", Value: t.Name()})
		}
	}
	var lg logs
	res, err := host.New(host.WithCacheDir(testenv.BuildCacheDir()), host.WithProgress(&lg)).Run(context.Background(), p, sourcesFor(t, l))
	if err != nil {
		t.Fatal(err)
	}
	ng, _ := res.Stage(lock.Nginx)
	// Drop the variant from the cache so that the next run of this test compiles again.
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(ng.Out)) })
	t.Logf("progress:\n%s", lg.String())
	for _, s := range res.Stages {
		want := s.Name != lock.Nginx
		if s.Cached != want {
			t.Errorf("stage %s: cached=%v, want %v", s.Name, s.Cached, want)
		}
	}
	log := lg.String()
	if !strings.Contains(log, "stage openssl: cached") || !strings.Contains(log, "stage nginx: built in") {
		t.Errorf("progress lines do not show openssl cached and nginx built:\n%s", log)
	}
	b, err := os.ReadFile(ng.Log)
	if err != nil || !strings.Contains(string(b), "configuring for") && !strings.Contains(string(b), "checking for OS") {
		t.Errorf("nginx stage log %s does not show a configure run: %v", ng.Log, err)
	}
	t.Logf("nginx-only rebuild: %s wall, %s user, %s sys", ng.Wall.Round(time.Second), ng.User.Round(time.Second), ng.Sys.Round(time.Second))

	old, err1 := os.ReadFile(nginxBin(tree))
	rebuilt, err2 := os.ReadFile(nginxBin(ng.Out))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	compareTrees(t, tree, ng.Out)
	if sha256.Sum256(old) != sha256.Sum256(rebuilt) {
		t.Errorf("the rebuilt nginx differs from the cached one (%d vs %d bytes, first at %s): the build is not reproducible",
			len(rebuilt), len(old), firstDiff(nginxBin(tree), old, rebuilt))
	}
}

// firstDiff names the offset and ELF section of the first byte where two binaries differ.
func firstDiff(file string, a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	where := fmt.Sprintf("offset %#x", i)
	if f, err := elf.Open(file); err == nil {
		defer f.Close()
		for _, s := range f.Sections {
			if s.Type != elf.SHT_NOBITS && uint64(i) >= s.Offset && uint64(i) < s.Offset+s.FileSize {
				where += " in section " + s.Name
			}
		}
	}
	return where
}

// compareTrees reports every file whose content, mode or mtime differs between two trees.
func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	type entry struct {
		mode  os.FileMode
		mtime int64
		sum   [32]byte
	}
	walk := func(root string) map[string]entry {
		m := map[string]entry{}
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			e := entry{mode: fi.Mode(), mtime: fi.ModTime().Unix()}
			if fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				e.sum = sha256.Sum256(b)
			}
			m[rel] = e
			return nil
		})
		return m
	}
	ma, mb := walk(a), walk(b)
	for p, ea := range ma {
		eb, ok := mb[p]
		if !ok {
			t.Errorf("%s is only in the first tree", p)
		} else if ea != eb {
			t.Errorf("%s differs between two builds: %+v vs %+v", p, ea, eb)
		}
	}
	for p := range mb {
		if _, ok := ma[p]; !ok {
			t.Errorf("%s is only in the second tree", p)
		}
	}
}

// checkLicenses: the tree carries, under usr/share/licenses/<component>/, the license files
// of every component the plan compiles, byte for byte as in that component's source tarball
// (the mirror's), libcrypt's copyright file, and nothing else there.
func checkLicenses(t *testing.T, tree string, l *lock.Lock, p *plan.Plan) {
	t.Helper()
	mirror := testenv.MirrorDir(t)
	want := map[string]bool{}
	for _, s := range p.Stages {
		c, ok := l.Component(s.Source.Component)
		spec, _ := lock.SpecOf(c.Name)
		if !ok || spec.LicenseFiles == nil {
			continue
		}
		want[c.Name] = true
		tarball := filepath.Join(mirror, c.FileName())
		list, err := exec.Command("tar", "-tf", tarball).Output()
		if err != nil {
			t.Fatalf("listing %s: %v", tarball, err)
		}
		top := map[string]string{} // file name at the top of the source -> its path in the tarball
		for _, e := range strings.Split(strings.TrimSpace(string(list)), "\n") {
			if parts := strings.Split(strings.TrimSuffix(e, "/"), "/"); len(parts) == 2 {
				top[parts[1]] = e
			}
		}
		for _, alts := range spec.LicenseFiles {
			name := ""
			for _, a := range alts {
				if _, ok := top[a]; ok {
					name = a
					break
				}
			}
			if name == "" {
				t.Errorf("%s's source has none of %q", c.Name, alts)
				continue
			}
			orig, err := exec.Command("tar", "-xOf", tarball, top[name]).Output()
			if err != nil {
				t.Fatalf("reading %s from %s: %v", name, tarball, err)
			}
			got, err := os.ReadFile(filepath.Join(tree, plan.LicenseDir, c.Name, name))
			if err != nil {
				t.Errorf("the tree lacks %s's license: %v", c.Name, err)
				continue
			}
			if !bytes.Equal(got, orig) || len(got) < 100 {
				t.Errorf("%s/%s/%s (%d bytes) is not the source's %s (%d bytes)", plan.LicenseDir, c.Name, name, len(got), name, len(orig))
			}
		}
	}
	for _, must := range []string{lock.Nginx, lock.OpenSSL, lock.PCRE2, lock.Zlib} {
		if !want[must] {
			t.Errorf("the plan compiles no %s stage with a license", must)
		}
	}
	// libcrypt.a, linked statically from this machine's libcrypt-dev: its copyright file.
	want[plan.LibcryptLicense] = true
	host, err := os.ReadFile("/usr/share/doc/" + plan.LibcryptPackage + "/copyright")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(tree, plan.LicenseDir, plan.LibcryptLicense, "copyright")); err != nil || !bytes.Equal(got, host) {
		t.Errorf("the tree's %s/%s/copyright is not this machine's %s copyright file: %v", plan.LicenseDir, plan.LibcryptLicense, plan.LibcryptPackage, err)
	}
	entries, _ := os.ReadDir(filepath.Join(tree, plan.LicenseDir))
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("%s/%s: a license of nothing the plan compiles", plan.LicenseDir, e.Name())
		}
	}
}
