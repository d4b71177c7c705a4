package plan

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// stack is what the nginx stage is built against, from the lock: its zlib and TLS library
// (stage names, which are the lock's component names) and how nginx's source is configured.
type stack struct {
	zlib, tls string
	// configure is "./configure" in nginx.org's release tarballs and "./auto/configure" in
	// the repository's tree (a git source), which has no top-level copy.
	configure string
}

func stackOf(l *lock.Lock) stack {
	st := stack{zlib: l.ZlibLibrary().Name, tls: l.TLS().Name, configure: "./configure"}
	if l.MustComponent(lock.Nginx).Git != nil {
		st.configure = "./auto/configure"
	}
	return st
}

// profiled are the library stages the pgo mode instruments and compiles with the profile,
// besides nginx. The default stack (OpenSSL and zlib) profiles OpenSSL, as it always has: its
// recorded profiles and their training keys stay valid. Any other stack profiles all three
// libraries: zlib-ng's and AWS-LC's hot paths are their own assembly and SIMD kernels, which
// no profile changes, but what calls them (deflate's match finding and block logic, the TLS
// state machine, record layer and certificate code, which are C and C++) is steered by it,
// and LTO inlines that glue into nginx's calls.
func (st stack) profiled() []string {
	if st.zlib == lock.Zlib && st.tls == lock.OpenSSL {
		return []string{lock.OpenSSL}
	}
	return []string{st.zlib, lock.PCRE2, st.tls}
}

// Pin is what identifies a stage's source in stage identities (training key, host cache):
// the tarball's SHA-256, or "git-tree:" and a git source's tree.
func (s Source) Pin() string {
	if s.Tree != "" {
		return "git-tree:" + s.Tree
	}
	return s.SHA256
}

// The git sources' archives are gzip'd tars like the release tarballs: prelude unpacks them.

var zlibNGScript = prelude + `# zlib-ng in zlib-compatible mode: zlib's API and libz.a (what nginx's gzip module links),
# with zlib-ng's SIMD deflate; its runtime CPU detection picks the widest kernels the CPU
# has. Static only, like zlib.
export CFLAGS="$CFLAGS -ffile-prefix-map=$WORK=/build/zlib_ng"
./configure --zlib-compat --static --prefix=/usr
make -j"$JOBS" libz.a
make install DESTDIR="$OUT"
rm -rf "$OUT/usr/share" "$OUT/usr/lib/pkgconfig"
` + licenseScript(lock.ZlibNG) + epilogue

var awsLCScript = prelude + `# AWS-LC's libssl and libcrypto, static, without its tools, tests, Go or Perl: the assembly
# comes pre-generated in the source (DISABLE_PERL), and nothing else needs them. CMake's
# Release flags are reduced to -DNDEBUG so that CFLAGS (-O2, the CPU level, hardening) decide
# as in every other stage. Its libssl is C++ written to need no C++ runtime (no exceptions,
# RTTI or standard library; BoringSSL's rule): the static libraries reference only libc, so
# nginx links as before and the image, which has no libstdc++, runs it (the smoke tests and
# the image's needed-libraries check prove it on every build).
export CFLAGS="$CFLAGS -ffile-prefix-map=$WORK=/build/aws_lc"
cmake -S . -B build -G "Unix Makefiles" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE=-DNDEBUG -DCMAKE_CXX_FLAGS_RELEASE=-DNDEBUG \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CFLAGS" -DCMAKE_ASM_FLAGS="$CFLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="$LDFLAGS" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_LIBDIR=lib \
  -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF -DBUILD_TOOL=OFF \
  -DDISABLE_GO=ON -DDISABLE_PERL=ON
make -C build -j"$JOBS" ssl crypto
mkdir -p "$OUT/usr/lib" "$OUT/usr/include"
install -m 0644 build/ssl/libssl.a build/crypto/libcrypto.a "$OUT/usr/lib/"
cp -R include/openssl "$OUT/usr/include/openssl"
` + licenseScript(lock.AWSLC) + epilogue

// awsLCArchiver makes CMake archive with the LTO plugin: CMake reads CMAKE_AR and
// CMAKE_RANLIB, not the AR and RANLIB the lto mode puts in every stage's environment, and
// an archive of GIMPLE objects without the plugin's symbol index links as if empty.
const awsLCArchiver = ` \
  -DCMAKE_AR="$(command -v "$AR")" -DCMAKE_RANLIB="$(command -v "$RANLIB")"
`

// awsLCScriptFor is AWS-LC's script for the mode: with lto, CMake archives through gcc-ar.
func awsLCScriptFor(lto bool) string {
	if !lto {
		return awsLCScript
	}
	return strings.Replace(awsLCScript, "-DDISABLE_PERL=ON\n", "-DDISABLE_PERL=ON"+awsLCArchiver, 1)
}

// cmakePackages and cmakeTools are what AWS-LC's build needs beyond the default builder:
// CMake, and the C++ compiler (build-essential has g++).
var (
	cmakePackages = []string{"cmake"}
	cmakeTools    = []Tool{{Command: "cmake", Package: "cmake"}, {Command: "c++", Package: "g++"}}
)

// opensslTickets is the shipped nginx.conf's session-ticket setting, written for OpenSSL.
const opensslTickets = `    # Session tickets off: nginx makes the ticket key once at start and a container may run
    # for months without a reload, so one stolen key would decrypt every recorded session
    # since start (no forward secrecy). Without tickets, TLS 1.2 resumes by session ID and
    # TLS 1.3 by stateful tickets, both from the shared cache above.
    ssl_session_tickets off;
`

// awsLCTickets replaces it when nginx is built with AWS-LC, which (like BoringSSL) resumes
// TLS 1.3 sessions only from stateless tickets: with tickets off, no TLS 1.3 client would
// ever resume (the smoke suite's resumption check fails).
const awsLCTickets = `    # Session tickets on: AWS-LC resumes TLS 1.3 sessions only from tickets (it has no
    # stateful TLS 1.3 resumption), so without them every TLS 1.3 connection would pay a full
    # handshake. nginx (1.23.2 and later) makes the ticket keys in the shared cache above and
    # rotates them itself (each encrypts for ssl_session_timeout, then only decrypts), so a
    # stolen key exposes at most about two days of sessions, not everything since start.
    ssl_session_tickets on;
`

// nginxConf is the shipped nginx.conf for the stack: unchanged for OpenSSL; for AWS-LC with
// session tickets on (awsLCTickets).
func (st stack) nginxConf(conf []byte) ([]byte, error) {
	if st.tls != lock.AWSLC {
		return conf, nil
	}
	if !bytes.Contains(conf, []byte(opensslTickets)) {
		return nil, fmt.Errorf("the shipped nginx.conf no longer has the session-ticket paragraph that AWS-LC's build replaces (pipeline/plan/libraries.go: opensslTickets): update it there")
	}
	return bytes.Replace(conf, []byte(opensslTickets), []byte(awsLCTickets), 1), nil
}
