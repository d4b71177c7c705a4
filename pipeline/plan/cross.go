package plan

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Cross-compilation: a plan for another architecture than the builder's runs the builder
// natively (its own compilers for make, perl, configure's shell) and compiles with the GNU
// cross toolchain for the target, as BuildKit's --platform=$BUILDPLATFORM builds do. It is
// 5-20x faster than running the target's compiler under emulation, and the output is the
// same code: the same GCC version, flags and sources, targeting the same -march.
//
// The target plan (New) is what the build is: its platform, CPU level, flags, modules and
// stage names. ForBuild turns it into what one builder runs; a builder of the target's own
// architecture runs the target plan unchanged, so a native build (and every amd64 stage key,
// output and digest) is exactly what it was. A cross plan differs only by
//   - environment appended after each stage's own (the toolchain's commands: CC, AR, ...),
//   - the few script lines that name a native command (cc, ar, strip) or must be told the
//     host triple (autoconf's --host, CMake's target system), rewritten by crossScript,
//   - the toolchain's packages in BuildPackages, HostTools and HostLibraries.
//
// nginx's configure is not written for cross-compiling: it runs its feature tests (type
// sizes, byte order, a few system calls) as programs. They run here through binfmt_misc
// and qemu-user (qemu-aarch64 registered with the F flag, so it works in containers too),
// with QEMU_LD_PREFIX pointing at the cross toolchain's C library. Answering them with given
// results instead would mean patching nginx's auto/ scripts (it has no cache variables) and
// keeping those answers true for every nginx release; through qemu the answers are the
// target's own, and only configure's small test programs run emulated, never the compiler.

// Cross is how a plan's stages are cross-compiled: nil in a native plan.
type Cross struct {
	// Build is the platform the builder runs on (the target is Plan.Platform).
	Build Platform
	// Triple is the GNU triple of the target (aarch64-linux-gnu): the toolchain's prefix.
	Triple string
	// Sysroot is where the toolchain's target C library lives, for qemu (QEMU_LD_PREFIX).
	Sysroot string
	// Emulator is the binfmt_misc handler that runs the target's programs (qemu-aarch64).
	Emulator string
}

// gnuArch is the GNU CPU name of a GOARCH-style architecture.
var gnuArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// crossPackages are the Debian/Ubuntu packages a builder of another architecture needs to
// compile for arch: the cross C compilers (gcc, g++, binutils, the target's libc6-dev),
// the target's static libcrypt that nginx links, and qemu-user-static for nginx's configure
// tests (which also need binfmt_misc on the machine: binfmt-support registers qemu there; a
// container uses the machine's registration). Debian ships no cross package of libxcrypt,
// so libcrypt-dev is the target architecture's own (multiarch: `dpkg --add-architecture`,
// then NAME:ARCH; co-installable with the native one), which the cross GCC finds in
// /usr/lib/<triple>.
func crossPackages(arch string) []string {
	return []string{"crossbuild-essential-" + arch, crossLibcrypt(arch), "qemu-user-static"}
}

// crossLibcrypt is the package of the target's libcrypt.a in a cross build.
func crossLibcrypt(arch string) string { return LibcryptPackage + ":" + arch }

// LibcryptPackageOf is the package whose libcrypt.a p links (its version goes into the SBOM):
// the target architecture's, named with its architecture always. A builder with a second
// architecture's libcrypt-dev installed (this machine after .ci/install-deps, for arm64 cross
// builds) answers dpkg-query about a bare "libcrypt-dev" with both versions run together
// ("1:4.4.33-21:4.4.33-2"), which no scanner matches.
func (p *Plan) LibcryptPackageOf() string {
	return crossLibcrypt(p.Platform.Arch)
}

// debVersionRE is a Debian package version (deb-version(7)): [epoch:]upstream[-revision], the
// upstream part starting with a digit. A colon is allowed only after the epoch, so two
// versions printed back to back do not parse.
var debVersionRE = regexp.MustCompile(`^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]*$`)

// CheckDebVersion refuses what is not one Debian package version: what dpkg-query printed for
// pkg goes into the SBOM as a pkg:deb purl's version, where a scanner must match it.
func CheckDebVersion(pkg, v string) error {
	if !debVersionRE.MatchString(v) || len(v) > 128 {
		return fmt.Errorf("dpkg-query printed %q for %s: not one Debian package version (two architectures' packages read together?)", v, pkg)
	}
	return nil
}

// ForBuild is the plan a builder of architecture buildArch runs to build p: p itself when
// buildArch is p's own architecture, else p cross-compiled (see Cross). The lto and pgo
// modes are refused for a cross build: their archives and profiles are set up for a native
// GCC (gcc-ar, a training that runs the instrumented nginx), so they are built on a native
// builder of the target (the arm runners).
func (p *Plan) ForBuild(buildArch string) (*Plan, error) {
	if buildArch == p.Platform.Arch || p.Cross != nil {
		if p.Cross != nil && p.Cross.Build.Arch != buildArch {
			return nil, fmt.Errorf("plan: this plan cross-compiles from linux/%s, not linux/%s", p.Cross.Build.Arch, buildArch)
		}
		return p, nil
	}
	if _, ok := gnuArch[buildArch]; !ok {
		return nil, fmt.Errorf("plan: cannot cross-compile for %s from a linux/%s builder: builders are %s", p.Platform, buildArch, SupportedList())
	}
	if p.Optimize != OptimizeNone {
		return nil, fmt.Errorf("plan: optimize %q cannot be cross-compiled for %s from a linux/%s builder (LTO archives and PGO training are set up for the target's own GCC): build with --optimize none, or on a %s machine", p.Optimize, p.Platform, buildArch, p.Platform)
	}
	if p.lock == nil {
		return nil, fmt.Errorf("plan: %s plan was not made by plan.New, so it cannot be cross-compiled", p.Platform)
	}
	return New(p.lock, append(append([]Option(nil), p.opts...), withBuildArch(buildArch))...)
}

// withBuildArch makes New plan a cross build from buildArch (ForBuild's option).
func withBuildArch(arch string) Option {
	return func(o *options) error { o.buildArch = arch; return nil }
}

// newCross is the Cross of the options, or nil for a native build.
func newCross(o options) *Cross {
	if o.buildArch == "" || o.buildArch == o.platform.Arch {
		return nil
	}
	triple := gnuArch[o.platform.Arch] + "-linux-gnu"
	return &Cross{Build: Platform{OS: "linux", Arch: o.buildArch}, Triple: triple, Sysroot: "/usr/" + triple, Emulator: "qemu-" + gnuArch[o.platform.Arch]}
}

// tool is the toolchain's name of a binutils/gcc command (aarch64-linux-gnu-gcc).
func (c *Cross) tool(name string) string { return c.Triple + "-" + name }

// env is what every cross stage gets after its own environment: the toolchain's commands
// (read by make's implicit rules, autoconf, CMake, zlib's and zstd's makefiles) and the
// target triple; for the OpenSSL stage, CROSS_COMPILE instead (its Configure prefixes CC,
// AR and RANLIB with it, and would prefix a CC given here a second time).
func (c *Cross) env(stage string) []EnvVar {
	if stage == lock.OpenSSL || stage == stageOpenSSLInstrumented {
		return []EnvVar{{"CROSS_COMPILE", c.Triple + "-"}}
	}
	env := []EnvVar{
		{"CC", c.tool("gcc")},
		{"CXX", c.tool("g++")},
		{"AR", c.tool("ar")},
		{"RANLIB", c.tool("ranlib")},
		{"STRIP", c.tool("strip")},
		// zlib's and zlib-ng's configure take the target from CHOST (their cross mode).
		{"CHOST", c.Triple},
		{"CROSS_HOST", c.Triple},
	}
	if stage == lock.Nginx {
		// nginx's configure runs its test programs: through binfmt_misc's qemu, which finds
		// the target's dynamic loader and libc under this prefix.
		env = append(env, EnvVar{"QEMU_LD_PREFIX", c.Sysroot})
	}
	return env
}

// crossEdits are the script lines a cross build changes, each a literal line of the native
// script and its replacement; a script that lacks one of its lines is a plan bug, reported
// by crossScript (a test builds every cross plan).
var crossEdits = []struct{ from, to string }{
	// PCRE2's configure (autoconf) cross-compiles only when told the host triple.
	{"./configure --prefix=/usr --disable-shared", `./configure --host="$CROSS_HOST" --prefix=/usr --disable-shared`},
	// AWS-LC: CMake's cross mode, so its build picks the target's assembly (by
	// CMAKE_SYSTEM_PROCESSOR) and never runs a target program.
	{`cmake -S . -B build -G "Unix Makefiles" \`, `cmake -S . -B build -G "Unix Makefiles" \
  -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="${CROSS_HOST%%-*}" \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_ASM_COMPILER="$CC" \
  -DCMAKE_AR="$(command -v "$AR")" -DCMAKE_RANLIB="$(command -v "$RANLIB")" \`},
	// brotli's objects and archive, built directly.
	{`xargs -P "$JOBS" -n 2 sh -c 'cc $CFLAGS`, `xargs -P "$JOBS" -n 2 sh -c '"$CC" $CFLAGS`},
	{"ar rcD libbrotlienc.a", `"$AR" rcD libbrotlienc.a`},
	// A cross GCC ignores LIBRARY_PATH (a native compiler's search path), through which the
	// nginx stage shows the linker its dependencies' static libraries: the same directories
	// go to it as -L options in CC, which nginx uses for its feature tests and its build and
	// does not record (nginx -V prints the configure arguments only).
	{"./configure \\\n  --prefix=/etc/nginx", crossLibDirs + "./configure \\\n  --prefix=/etc/nginx"},
	{"./auto/configure \\\n  --prefix=/etc/nginx", crossLibDirs + "./auto/configure \\\n  --prefix=/etc/nginx"},
	// nginx's binary, stripped by the target's binutils.
	{`strip --strip-all "$OUT/usr/sbin/nginx"`, `"$STRIP" --strip-all "$OUT/usr/sbin/nginx"`},
}

// crossLibDirs puts LIBRARY_PATH's directories into CC as -L options (see crossEdits).
const crossLibDirs = `for d in $(echo "$LIBRARY_PATH" | tr ':' ' '); do CC="$CC -L$d"; done
`

// script rewrites a stage's script for the cross toolchain (crossEdits). The libcrypt
// licence stays /usr/share/doc/libcrypt-dev's: a multiarch package's documentation is one
// file shared by its architectures (dpkg refuses them differing).
func (c *Cross) script(s Stage) (string, error) {
	out := s.Script
	for _, e := range crossEdits {
		out = strings.ReplaceAll(out, e.from, e.to)
	}
	if s.Source.Component == lock.Nginx && strings.Contains(out, "strip --strip-all") && !strings.Contains(out, `"$STRIP" --strip-all`) {
		return "", fmt.Errorf("plan: stage %s strips with the native strip in a cross build", s.Name)
	}
	if s.Source.Component == lock.Nginx && !strings.Contains(out, crossLibDirs) {
		return "", fmt.Errorf("plan: stage %s configures nginx without its libraries' -L options in a cross build", s.Name)
	}
	return out, nil
}

// crossify turns the builder's native stages into cross ones (see Cross).
func (b *builder) crossify() error {
	c := b.p.Cross
	if c == nil {
		return nil
	}
	arch := b.o.platform.Arch
	for i, s := range b.p.Stages {
		script, err := c.script(s)
		if err != nil {
			return err
		}
		s.Script = script
		s.Env = append(append([]EnvVar(nil), s.Env...), c.env(s.Name)...)
		b.p.Stages[i] = s
	}
	b.p.BuildPackages = append(append([]string(nil), b.p.BuildPackages...), crossPackages(arch)...)
	tools := append([]Tool(nil), b.p.HostTools...)
	for _, name := range []string{"gcc", "g++", "ar", "ranlib", "strip"} {
		pkg := "gcc-" + c.Triple
		switch name {
		case "g++":
			pkg = "g++-" + c.Triple
		case "ar", "ranlib", "strip":
			pkg = "binutils-" + c.Triple
		}
		tools = append(tools, Tool{Command: c.tool(name), Package: pkg})
	}
	tools = append(tools, Tool{Command: "qemu-" + gnuArch[arch] + "-static", Package: "qemu-user-static"})
	b.p.HostTools = tools
	b.p.HostLibraries = []Tool{
		{Command: "libcrypt.a", Package: crossLibcrypt(arch)},
		{Command: "libc.so", Package: "libc6-dev-" + arch + "-cross"},
	}
	return nil
}

// The target architecture's packages (libcrypt-dev:arm64) come from the builder's apt
// sources with the architecture added (dpkg --add-architecture). A Debian image's sources
// serve every architecture from the same URLs, but an Ubuntu image's do not: amd64 and
// arm64 are different archives, so each platform's image names its own. A container
// executor that can read the builder image's target-platform variant mounts that variant's
// /etc/apt at ContainerTargetAptDir when its sources differ; the setup then keeps the
// builder's sources to its own architecture and adds the target's for the target's. The
// repository names no archive: both come from the images.

// ContainerTargetAptDir is where a cross builder finds the /etc/apt of its image's
// target-platform variant, when the executor mounts it (only when its sources differ).
const ContainerTargetAptDir = "/nginx-forge/target-apt"

// ContainerAptDir is apt's configuration directory in a builder image.
const ContainerAptDir = "/etc/apt"

// CrossAptSources are the files of an image's ContainerAptDir that name its package sources:
// what an executor compares between the builder image's two platform variants.
var CrossAptSources = []string{"sources.list", "sources.list.d"}

// crossAptSplit, when targetDir holds the target variant's apt sources, keeps the builder's
// sources (in aptDir: /etc/apt in a builder; a test runs it on a copy) to the builder's
// architecture and adds the target's for the target's architecture (see
// ContainerTargetAptDir). deb822 stanzas get an Architectures field, one-line entries an
// arch= option.
func (c *Cross) crossAptSplit(target, aptDir, targetDir string) string {
	oneLine := func(arch string) string {
		return `-e '/^deb(-src)? \[/{/arch=/!s/^(deb(-src)?) \[/\1 [arch=` + arch + ` /;b;}' -e 's/^(deb(-src)?) /\1 [arch=` + arch + `] /'`
	}
	return fmt.Sprintf(`if [ -d %[4]s ]; then
  for f in %[3]s/sources.list.d/*.sources; do
    if [ -e "$f" ] && ! grep -q '^Architectures:' "$f"; then sed -i '/^Types:/a Architectures: %[2]s' "$f"; fi
  done
  for f in %[3]s/sources.list %[3]s/sources.list.d/*.list; do
    if [ -e "$f" ]; then sed -i -E %[6]s "$f"; fi
  done
  for f in %[4]s/sources.list.d/*.sources; do
    if [ -e "$f" ]; then sed '/^Architectures:/d; /^Types:/a Architectures: %[1]s' "$f" > %[3]s/sources.list.d/nginx-forge-target-"$(basename "$f")"; fi
  done
  for f in %[4]s/sources.list %[4]s/sources.list.d/*.list; do
    if [ -e "$f" ]; then sed -E %[5]s "$f"; fi
  done > %[3]s/sources.list.d/nginx-forge-target.list
fi
`, target, c.Build.Arch, aptDir, targetDir, oneLine(target), oneLine(c.Build.Arch))
}
