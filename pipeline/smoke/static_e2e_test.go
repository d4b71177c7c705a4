//go:build integration

package smoke

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// amd64CCOpt is what an amd64 nginx of this project records as its --with-cc-opt (its
// configure arguments, which nginx -V prints from the binary): the architecture check's
// input.
const amd64CCOpt = "-O2 -march=x86-64-v3 -fstack-protector-strong -fcf-protection=full"

// compile builds a tiny C program with the given flags into root/usr/sbin/nginx. It calls
// memcpy and sprintf with sizes the compiler knows, so fortification has work to do, and
// keeps a local array, so the stack protector does. It carries configure arguments with
// amd64CCOpt, as nginx does.
func compile(t *testing.T, root string, flags ...string) {
	t.Helper()
	compileWithCCOpt(t, root, amd64CCOpt, flags...)
}

// compileWithCCOpt is compile with the configure arguments' --with-cc-opt given.
func compileWithCCOpt(t *testing.T, root, ccOpt string, flags ...string) {
	t.Helper()
	cc := testenv.Tool(t, "gcc", "build-essential")
	src := filepath.Join(t.TempDir(), "main.c")
	prog := `#include <stdio.h>
#include <string.h>
static const char configure[] = "configure arguments: --prefix=/etc/nginx --with-cc-opt='` + ccOpt + `'";
int main(int argc, char **argv) {
	char buf[64];
	if (argc > 5) puts(configure);
	memcpy(buf, argv[0], strlen(argv[0]) % 32);
	sprintf(buf, "%d", argc);
	puts(buf);
	return 0;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "usr", "sbin", "nginx")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, flags...), "-o", out, src)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

func staticReport(t *testing.T, root string) Report {
	t.Helper()
	return staticReportFor(t, root, Options{})
}

// staticChecks are the checks that read the image's files only, no running server.
var staticChecks = []string{CheckNoShell, CheckPIE, CheckRELRO, CheckCanary, CheckNX, CheckFortify, CheckArch, CheckDynamicNeeds}

// staticReportFor runs the static checks on root with o.
func staticReportFor(t *testing.T, root string, o Options) Report {
	t.Helper()
	r := &runner{t: NotStarted(root, errors.New("static test")), o: o}
	r.o.defaults()
	var rep Report
	for _, c := range r.checks(nil) {
		if !slices.Contains(staticChecks, c.name) {
			continue
		}
		st, d := c.run(context.Background(), r)
		rep.Results = append(rep.Results, Result{Name: c.name, Status: st, Detail: d})
	}
	if len(rep.Results) != len(staticChecks) {
		t.Fatalf("ran %d static checks, want %d (%q)", len(rep.Results), len(staticChecks), staticChecks)
	}
	return rep
}

// TestArchitectureCheckOnRealBinaries: an amd64 binary with this project's amd64 flags in
// its configure arguments passes, also when amd64 is expected; expected as arm64, or without
// the amd64 control-flow flag (with -march=native, which counts as a -march), it fails naming why.
func TestArchitectureCheckOnRealBinaries(t *testing.T) {
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err != nil {
		t.Skip("needs an amd64 Debian host")
	}
	arch := func(root string, o Options) Result {
		r, _ := staticReportFor(t, root, o).Result(CheckArch)
		return r
	}
	root := hostRoot(t)
	compile(t, root, "-O2")
	if r := arch(root, Options{Expect: Expect{Arch: "amd64"}}); r.Status != Pass || !strings.Contains(r.Detail, "EM_X86_64") {
		t.Errorf("amd64 binary, amd64 expected: %s %q", r.Status, r.Detail)
	}
	if r := arch(root, Options{Expect: Expect{Arch: "arm64"}}); r.Status != Fail || !strings.Contains(r.Detail, "a amd64 binary in a arm64 image") {
		t.Errorf("amd64 binary, arm64 expected: %s %q, want FAIL naming both", r.Status, r.Detail)
	}
	root = hostRoot(t)
	compileWithCCOpt(t, root, "-O2 -march=native", "-O2")
	if r := arch(root, Options{}); r.Status != Fail || !strings.Contains(r.Detail, "-fcf-protection") {
		t.Errorf("no -fcf-protection: %s %q, want FAIL naming it", r.Status, r.Detail)
	}
}

// hostRoot makes a root filesystem laid out like a merged-/usr Debian image (/lib a link
// to usr/lib, /lib64/ld-linux-x86-64.so.2 an absolute link to the multiarch loader) with
// copies of the host's libc and loader, so a binary built here resolves in it.
func hostRoot(t *testing.T) string {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "lib64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr"), 0o755); err != nil {
		t.Fatal(err)
	}
	libdir := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")
	if err := os.MkdirAll(libdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"libc.so.6", "ld-linux-x86-64.so.2"} {
		b, err := os.ReadFile(filepath.Join("/lib/x86_64-linux-gnu", f))
		if err != nil {
			t.Skipf("host has no %s: %v", f, err)
		}
		if err := os.WriteFile(filepath.Join(libdir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Debian's interpreter path is a link to the multiarch one, absolute.
	if err := os.Symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", filepath.Join(root, "lib64", "ld-linux-x86-64.so.2")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestHardeningChecksOnRealBinaries(t *testing.T) {
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err != nil {
		t.Skip("needs an amd64 Debian host")
	}
	hardened := []string{"-O2", "-D_FORTIFY_SOURCE=2", "-fstack-protector-strong", "-fPIE", "-pie", "-Wl,-z,relro,-z,now", "-Wl,-z,noexecstack"}
	soft := []string{"-O0", "-U_FORTIFY_SOURCE", "-fno-stack-protector", "-fno-pie", "-no-pie", "-Wl,-z,norelro", "-Wl,-z,lazy", "-z", "execstack"}

	root := hostRoot(t)
	compile(t, root, hardened...)
	rep := staticReport(t, root)
	for _, r := range rep.Results {
		if r.Status != Pass {
			t.Errorf("hardened binary: %s: %s %s", r.Name, r.Status, r.Detail)
		}
	}

	root = hostRoot(t)
	compile(t, root, soft...)
	rep = staticReport(t, root)
	for _, name := range []string{CheckPIE, CheckRELRO, CheckCanary, CheckNX, CheckFortify} {
		if r, _ := rep.Result(name); r.Status != Fail {
			t.Errorf("unhardened binary: %s: %s %s, want FAIL", name, r.Status, r.Detail)
		}
	}
	// Partial RELRO (relro without now) is named as such.
	root = hostRoot(t)
	compile(t, root, append(hardened[:len(hardened)-2:len(hardened)-2], "-Wl,-z,relro,-z,lazy")...)
	if r, _ := staticReport(t, root).Result(CheckRELRO); r.Status != Fail || !strings.Contains(r.Detail, "partial RELRO") {
		t.Errorf("relro without now: %s %q, want FAIL naming partial RELRO", r.Status, r.Detail)
	}
}

func TestDynamicNeeds(t *testing.T) {
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err != nil {
		t.Skip("needs an amd64 Debian host")
	}
	root := hostRoot(t)
	compile(t, root, "-O2")
	if r, _ := staticReport(t, root).Result(CheckDynamicNeeds); r.Status != Pass || !strings.Contains(r.Detail, "GLIBC_2.") {
		t.Errorf("with libc: %s %q", r.Status, r.Detail)
	}

	// Without libc.so.6 (and so without a loader target), both are named.
	os.Remove(filepath.Join(root, "usr/lib/x86_64-linux-gnu/libc.so.6"))
	os.Remove(filepath.Join(root, "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"))
	r, _ := staticReport(t, root).Result(CheckDynamicNeeds)
	if r.Status != Fail || !strings.Contains(r.Detail, "libc.so.6: not found") || !strings.Contains(r.Detail, "interpreter /lib64/ld-linux-x86-64.so.2") {
		t.Errorf("without libc: %s %q", r.Status, r.Detail)
	}
}

// TestDynamicNeedsSymbolVersions: a libc older than the binary needs (the Debian 12 base
// under a binary built on glibc 2.39) fails with the version named. The "old" libc here is
// a library defining only GLIBC_2.2.5, made with a version script.
func TestDynamicNeedsSymbolVersions(t *testing.T) {
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err != nil {
		t.Skip("needs an amd64 Debian host")
	}
	cc := testenv.Tool(t, "gcc", "build-essential")
	root := hostRoot(t)
	compile(t, root, "-O2")
	dir := t.TempDir()
	src, script := filepath.Join(dir, "old.c"), filepath.Join(dir, "old.map")
	os.WriteFile(src, []byte("int puts(const char *s) { return 0; }\n"), 0o644)
	os.WriteFile(script, []byte("GLIBC_2.2.5 { global: puts; local: *; };\n"), 0o644)
	old := filepath.Join(root, "usr/lib/x86_64-linux-gnu/libc.so.6")
	os.Remove(old)
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-nostdlib", "-Wl,--version-script="+script, "-Wl,-soname,libc.so.6", "-o", old, src).CombinedOutput(); err != nil {
		t.Fatalf("making the old libc: %v\n%s", err, b)
	}
	r, _ := staticReport(t, root).Result(CheckDynamicNeeds)
	if r.Status != Fail || !strings.Contains(r.Detail, "needs version GLIBC_2.34") {
		t.Errorf("old libc: %s %q, want a failure naming GLIBC_2.34 (__libc_start_main)", r.Status, r.Detail)
	}
}
