package plan

import "strings"

// Compiler and linker flags. Every flag below is a decision; the reason sits next to it.
// The seed article's flags that were dropped, and why:
//
//   - -O3: nginx is branchy, pointer-chasing C whose hot paths are system calls and memory
//     copies; -O3's extra inlining and unrolling grows the binary (and i-cache pressure)
//     without a measured gain, and OpenSSL's hot loops are hand-written assembly that no -O
//     level touches. -O2 is what nginx.org's and the distributions' packages ship, so our
//     benchmark compares like with like; try -O3 with `ci bench` before changing it. zlib is
//     the exception: it gets -O3, measured (see zlibCFlags).
//   - -march=native as the default: bakes the build machine's CPU (AVX-512 on our CI hosts)
//     into the binary, which then crashes with SIGILL elsewhere. A named level is the
//     default (see CPULevels); "native" stays available on request.
//   - -DTCP_FASTOPEN=23: nginx already uses the kernel's TCP_FASTOPEN from <netinet/tcp.h>
//     (value 23 on Linux); defining it again changes nothing. Fast Open is turned on per
//     listener with `listen ... fastopen=N` and the net.ipv4.tcp_fastopen sysctl.
//   - -static-libstdc++: nginx, OpenSSL, PCRE2 and zlib are C; there is no libstdc++ to link.
//   - -g for zlib, PCRE2, OpenSSL: the image ships a stripped binary, and debug info only
//     carries build paths. (nginx's configure adds -g itself; -g0 undoes it, see nginxCCOpt.)
//   - OpenSSL enable-fips: FIPS needs the separately built and installed fips.so provider
//     plus `openssl fipsinstall`, and only a validated OpenSSL version counts as FIPS; a
//     static build with the flag set is not FIPS, just slower to build.
//   - OpenSSL -DOPENSSL_TLS_SECURITY_LEVEL=2: the default level is 2 since OpenSSL 3.2.

type flags struct {
	arch string
	cpu  string
}

func newFlags(arch, cpu string) flags { return flags{arch: arch, cpu: cpu} }

// compile are the code generation and hardening flags shared by every stage.
func (f flags) compile() []string {
	fl := []string{
		// See above for -O3.
		"-O2",
		// The CPU level (x86-64-v3 by default): AVX2/BMI2 code generation for the C parts.
		"-march=" + f.cpu,
		// Canaries in functions with arrays or address-taken locals: the distributions'
		// default, about 1% cost, catches stack buffer overflows.
		"-fstack-protector-strong",
		// Probe large stack allocations page by page so a huge alloca cannot jump over the
		// guard page into another mapping.
		"-fstack-clash-protection",
		// Bounds-checked libc calls (memcpy, sprintf, ...) where the size is known at compile
		// time; level 3 also uses sizes known only at run time (GCC 12+). Ubuntu's GCC
		// predefines _FORTIFY_SOURCE=3 and nginx builds with -Werror, so the macro is undefined
		// first: redefining it would be a warning, hence an error.
		"-U_FORTIFY_SOURCE", "-D_FORTIFY_SOURCE=3",
		// Position-independent code, so the executable is PIE and ASLR randomizes it too. The
		// static libraries need it as well: they are linked into the PIE.
		"-fPIE",
	}
	switch f.arch {
	case "amd64":
		// Intel CET: endbr64 landing pads and shadow-stack compatibility, used where the
		// kernel and CPU support it, no-ops elsewhere. x86 only.
		fl = append(fl, "-fcf-protection")
	case "arm64":
		// The arm64 counterpart of CET: pointer authentication and BTI landing pads, NOPs on
		// CPUs without them. Ubuntu enables it by default on arm64.
		fl = append(fl, "-mbranch-protection=standard")
	}
	return fl
}

// link are the linker flags shared by every stage that links.
func (f flags) link() []string {
	return []string{
		// Make the executable position independent (pairs with -fPIE).
		"-pie",
		// Full RELRO: resolve every symbol at start, then make the GOT read-only, so a
		// memory write bug cannot redirect library calls.
		"-Wl,-z,relro,-z,now",
		// Link only libraries that are actually used. This is what keeps the dynamic
		// libcrypt.so out: nginx's configure adds -lcrypt after our static -l:libcrypt.a.
		"-Wl,--as-needed",
	}
}

// zlibCFlags are zlib's CFLAGS: the shared ones plus two that gzip on the fly gains from
// (ci bench, gzip scenario, server CPU per request; the figures are in the "Build choices"
// table of pipeline/bench/MEASUREMENTS.md):
//   - -O3, zlib's own default when CFLAGS is unset (it comes after -O2, so it wins). Unlike
//     nginx, deflate is tight loops that -O3's unrolling helps.
//   - -DUNALIGNED_OK on amd64: longest_match, deflate's hottest loop, compares two bytes at a
//     time with unaligned 16-bit loads. Debian builds its zlib this way on i386 and amd64
//     (debian/rules of 1.2.13.dfsg-1, the baseline's libz); x86 loads any alignment in
//     hardware. Not on arm64: Debian does not, and it has not been measured there.
//     Neither the hardening flags nor the CPU level were what made the difference.
func (f flags) zlibCFlags() string {
	fl := append(f.compile(), "-O3")
	if f.arch == "amd64" {
		fl = append(fl, "-DUNALIGNED_OK")
	}
	return strings.Join(fl, " ")
}

func (f flags) cflags() string  { return strings.Join(f.compile(), " ") }
func (f flags) ldflags() string { return strings.Join(f.link(), " ") }

// nginxCCOpt is --with-cc-opt: our compile flags, visible in `nginx -V` so anyone can audit
// the hardening of a running binary. nginx's configure puts them after its own defaults
// (-pipe -O -W -Wall -Wpointer-arith -Wno-unused-parameter -Werror -g), so -O2 wins over -O
// and -g0 over -g: the debug info would be stripped anyway, but the linker's build-id is a
// hash over everything including it, and debug info names the build directories, so with -g
// the same sources built in two directories give two binaries. -Werror stays as upstream
// has it: the builder image is pinned, so a new warning means a deliberate compiler change
// worth a look, and it is why -U_FORTIFY_SOURCE matters on Ubuntu.
func (f flags) nginxCCOpt() string { return strings.Join(append(f.compile(), "-g0"), " ") }

// nginxLDOpt is --with-ld-opt. -l:libcrypt.a links crypt(3) (used by auth_basic) statically:
// nginx otherwise needs libcrypt.so.1, which a distroless base may not have (nginx then
// exits 127 at start). With --as-needed the later -lcrypt adds nothing, so the binary needs
// only the libc family (libc, libm, ld-linux).
func (f flags) nginxLDOpt() string {
	return strings.Join(append(f.link(), "-l:libcrypt.a"), " ")
}
