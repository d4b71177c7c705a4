package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// crossPlan is the arm64 plan of the lock at path ("" the test lock) as an amd64 builder
// runs it.
func crossPlan(t *testing.T, path string, opts ...plan.Option) *plan.Plan {
	t.Helper()
	l := testLock(t)
	if path != "" {
		var err error
		if l, err = lock.Load(path); err != nil {
			t.Fatal(err)
		}
	}
	p, err := plan.New(l, append([]plan.Option{plan.WithPlatform(linuxARM64)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.ForBuild("amd64")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCrossGolden keeps the cross-compiled arm64 plans (the test lock's and the AWS-LC
// variant's) under testdata/ like TestGolden: the toolchain's environment and the rewritten
// lines are reviewed as diffs. The native plans' goldens do not change with them.
func TestCrossGolden(t *testing.T) {
	for _, tc := range []struct{ name, lock string }{
		{"linux-arm64-cross-from-amd64", ""},
		{"linux-arm64-aws-lc-cross-from-amd64", testenv.AWSLCTestLockPath()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := crossPlan(t, tc.lock).Render()
			file := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./pipeline/plan -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("plan rendering differs from %s (if intended, run go test ./pipeline/plan -update and review):\n%s", file, diff(string(want), got))
			}
		})
	}
}

// TestForBuildNative: a builder of the target's own architecture runs the target plan
// itself, so a native build (every amd64 stage key and digest) is what it was.
func TestForBuildNative(t *testing.T) {
	l := testLock(t)
	for _, pl := range []plan.Platform{plan.DefaultPlatform, linuxARM64} {
		p, err := plan.New(l, plan.WithPlatform(pl))
		if err != nil {
			t.Fatal(err)
		}
		same, err := p.ForBuild(p.Platform.Arch)
		if err != nil || same != p || same.Cross != nil {
			t.Errorf("%s: ForBuild(%s) = %p, %v; want the plan itself", pl, p.Platform.Arch, same, err)
		}
	}
}

// TestCrossPlan: every stage of the cross plan keeps its native flags and gains the
// toolchain after them; the target's flags (-march, branch protection) stay; the same stages
// in the same order; the packages and tools name the cross toolchain.
func TestCrossPlan(t *testing.T) {
	l := testLock(t)
	native, err := plan.New(l, plan.WithPlatform(linuxARM64))
	if err != nil {
		t.Fatal(err)
	}
	c := crossPlan(t, "")
	if c.Cross == nil || c.Cross.Triple != "aarch64-linux-gnu" || c.Cross.Build.String() != "linux/amd64" || c.Cross.Emulator != "qemu-aarch64" {
		t.Fatalf("cross = %+v", c.Cross)
	}
	if c.Platform != native.Platform || c.CPU != native.CPU || strings.Join(c.Modules, ",") != strings.Join(native.Modules, ",") {
		t.Errorf("the cross plan builds something else: %s %s %v", c.Platform, c.CPU, c.Modules)
	}
	if c.CC() != "aarch64-linux-gnu-gcc" || native.CC() != "cc" {
		t.Errorf("CC: cross %s, native %s", c.CC(), native.CC())
	}
	if len(c.Stages) != len(native.Stages) {
		t.Fatalf("%d stages, native %d", len(c.Stages), len(native.Stages))
	}
	for i, s := range c.Stages {
		n := native.Stages[i]
		if s.Name != n.Name || len(s.Env) <= len(n.Env) {
			t.Errorf("stage %d: %s (env %d), native %s (env %d)", i, s.Name, len(s.Env), n.Name, len(n.Env))
			continue
		}
		for j, e := range n.Env {
			if s.Env[j] != e {
				t.Errorf("stage %s: env %s=%s, native %s=%s", s.Name, s.Env[j].Name, s.Env[j].Value, e.Name, e.Value)
			}
		}
		switch s.Name {
		case lock.OpenSSL:
			if env(s, "CROSS_COMPILE") != "aarch64-linux-gnu-" || env(s, "CC") != "" || env(s, "OPENSSL_TARGET") != "linux-aarch64" {
				t.Errorf("openssl: CROSS_COMPILE %q CC %q target %q", env(s, "CROSS_COMPILE"), env(s, "CC"), env(s, "OPENSSL_TARGET"))
			}
		case lock.Nginx:
			if env(s, "QEMU_LD_PREFIX") != "/usr/aarch64-linux-gnu" || !strings.Contains(s.Script, `"$STRIP" --strip-all`) {
				t.Errorf("nginx: QEMU_LD_PREFIX %q, script strips with %v", env(s, "QEMU_LD_PREFIX"), strings.Contains(s.Script, `"$STRIP"`))
			}
			for _, f := range []string{"-march=armv8.2-a", "-mbranch-protection=standard"} {
				if !strings.Contains(env(s, "NGINX_CC_OPT"), f) {
					t.Errorf("nginx: NGINX_CC_OPT lacks %s: %s", f, env(s, "NGINX_CC_OPT"))
				}
			}
			if strings.Contains(env(s, "NGINX_CC_OPT"), "-fcf-protection") {
				t.Error("nginx: -fcf-protection (x86 only) in an arm64 build")
			}
		default:
			if env(s, "CC") != "aarch64-linux-gnu-gcc" || env(s, "CHOST") != "aarch64-linux-gnu" {
				t.Errorf("stage %s: CC %q CHOST %q", s.Name, env(s, "CC"), env(s, "CHOST"))
			}
		}
	}
	pkgs := strings.Join(c.BuildPackages, " ")
	for _, want := range []string{"crossbuild-essential-arm64", "libcrypt-dev:arm64", "qemu-user-static"} {
		if !strings.Contains(pkgs, want) {
			t.Errorf("build packages lack %s: %s", want, pkgs)
		}
	}
	if c.LibcryptPackageOf() != "libcrypt-dev:arm64" || native.LibcryptPackageOf() != "libcrypt-dev:arm64" {
		t.Errorf("libcrypt package: cross %s, native %s", c.LibcryptPackageOf(), native.LibcryptPackageOf())
	}
	again, err := c.ForBuild("amd64")
	if err != nil || again != c {
		t.Errorf("ForBuild of a cross plan from its own builder: %p %v", again, err)
	}
	if _, err := c.ForBuild("arm64"); err == nil {
		t.Error("a cross plan from amd64 was accepted for an arm64 builder")
	}
}

// TestCrossEditsApply: every line a cross build rewrites is in some native plan's script,
// and is gone from the cross plan (a script edit that no longer matches would leave a
// native command in a cross build).
func TestCrossEditsApply(t *testing.T) {
	var native, cross strings.Builder
	// The test twin (nginx from a git tree: ./auto/configure), the AWS-LC twin, and the shipped
	// default lock (nginx.org's tarball: ./configure), whose sources a plan does not fetch.
	for _, path := range []string{"", testenv.AWSLCTestLockPath(), filepath.Join(testenv.RepoRoot(), lock.DefaultPath)} {
		l := testLock(t)
		if path != "" {
			var err error
			if l, err = lock.Load(path); err != nil {
				t.Fatal(err)
			}
		}
		p, err := plan.New(l, plan.WithPlatform(linuxARM64))
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.ForBuild("amd64")
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Stages {
			native.WriteString(p.Stages[i].Script)
			cross.WriteString(c.Stages[i].Script)
		}
	}
	from, to := plan.CrossEdits()
	for i := range from {
		if !strings.Contains(native.String(), from[i]) {
			t.Errorf("no native script has the line a cross build rewrites: %q", from[i])
		}
		if !strings.Contains(cross.String(), to[i]) {
			t.Errorf("no cross script has the rewritten line %q", to[i])
		}
	}
}

// TestCrossRefusesLTOAndPGO: their archives and training need the target's own GCC.
func TestCrossRefusesLTOAndPGO(t *testing.T) {
	l := testLock(t)
	for _, mode := range []string{plan.OptimizeLTO, plan.OptimizePGO} {
		p, err := plan.New(l, plan.WithPlatform(linuxARM64), plan.WithOptimize(mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ForBuild("amd64"); err == nil || !strings.Contains(err.Error(), "--optimize none") {
			t.Errorf("optimize %s cross-compiled: %v", mode, err)
		}
	}
}

// TestCheckDebVersion: one Debian version passes; two run together (dpkg-query about a
// package installed for two architectures, unqualified), or anything else, is refused.
func TestCheckDebVersion(t *testing.T) {
	for _, v := range []string{"1:4.4.33-2", "4.4.36-4build1", "2.39-0ubuntu8.4", "1.2.3+dfsg~rc1-1"} {
		if err := plan.CheckDebVersion("p", v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"1:4.4.33-21:4.4.33-2", "", "x1.0", "1.0 2.0", "1.0\n"} {
		if err := plan.CheckDebVersion("libcrypt-dev", v); err == nil || !strings.Contains(err.Error(), "libcrypt-dev") {
			t.Errorf("%q: err = %v, want a refusal naming the package", v, err)
		}
	}
}

// TestLibcryptPackageNamesItsArchitecture: the package whose version the SBOM records is the
// target's, named with its architecture, native or cross.
func TestLibcryptPackageNamesItsArchitecture(t *testing.T) {
	for _, platform := range []plan.Platform{plan.DefaultPlatform, linuxARM64} {
		p, err := plan.New(testLock(t), plan.WithPlatform(platform))
		if err != nil {
			t.Fatal(err)
		}
		want := "libcrypt-dev:" + platform.Arch
		if got := p.LibcryptPackageOf(); got != want {
			t.Errorf("%s: %s, want %s", platform, got, want)
		}
	}
}
