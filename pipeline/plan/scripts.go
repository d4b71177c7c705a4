package plan

import (
	"fmt"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// The stage scripts. They run under `bash -euo pipefail` in WORK (see the contract in
// plan.go) and read their flags from the stage's Env, so the same script serves every CPU
// level and platform.
//
// Reproducibility rules every script follows:
//   - sources are unpacked to $WORK/src and built in place with relative paths, so __FILE__
//     (OpenSSL's and nginx's error locations) never holds an executor's directory;
//   - executor paths ($WORK, $DEP_*) go only into variables the build does not record:
//     -ffile-prefix-map in CFLAGS for zlib and PCRE2 (their libraries do not embed CFLAGS),
//     CPATH/LIBRARY_PATH for nginx (its `nginx -V` prints only the configure arguments). OpenSSL records its CFLAGS in the library (OpenSSL_version(OPENSSL_CFLAGS),
//     linked into nginx), so it gets no prefix map at all: a map naming $WORK would itself
//     put $WORK into the binary, and its relative build leaves nothing to map;
//   - installs use a fixed --prefix=/usr and DESTDIR=$OUT, so no file in OUT names OUT;
//   - SOURCE_DATE_EPOCH (from the lock) replaces build dates (OpenSSL's buildinf.h) and
//     every file in OUT gets that mtime.

// LicenseDir is where the image carries the upstream licenses, one directory per component.
const LicenseDir = "usr/share/licenses"

// licenseScript installs component's license files from the current directory (its
// unpacked source) into OUT/usr/share/licenses/<component>: the component table's licence
// files (lock.Spec.LicenseFiles), each list of alternatives taking the first present.
func licenseScript(component string) string {
	dir := `"$OUT/` + LicenseDir + `/` + component + `"`
	var b strings.Builder
	fmt.Fprintf(&b, "# %s's license, from its verified source, for /%s/%s in the image.\n", component, LicenseDir, component)
	fmt.Fprintf(&b, "mkdir -p %s\n", dir)
	spec, _ := lock.SpecOf(component)
	for _, alts := range spec.LicenseFiles {
		fmt.Fprintf(&b, "for f in %s; do\n", strings.Join(alts, " "))
		fmt.Fprintf(&b, "  if [ -f \"$f\" ]; then install -m 0644 \"$f\" %s/; break; fi\n", dir)
		fmt.Fprintf(&b, "  if [ \"$f\" = %s ]; then echo \"%s: no license file (%s) in the source\" >&2; exit 1; fi\n", alts[len(alts)-1], component, strings.Join(alts, ", "))
		b.WriteString("done\n")
	}
	return b.String()
}

// prelude is shared by all scripts.
const prelude = `umask 022
mkdir src
tar -xzf "$SRC" -C src --strip-components=1 --no-same-owner
cd src
`

// epilogue stamps OUT's files with SOURCE_DATE_EPOCH so a stage's output is byte-identical
// across runs (the image layer clamps mtimes too; this keeps cached OUTs comparable).
const epilogue = `find "$OUT" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
`

var zlibScript = prelude + `# Static only: nginx links libz.a; there is no libz.so to ship or to pick up by mistake.
# CFLAGS has zlib's own additions (-O3, -DUNALIGNED_OK on amd64): pipeline/plan/flags.go.
export CFLAGS="$CFLAGS -ffile-prefix-map=$WORK=/build/zlib"
./configure --static --prefix=/usr
make -j"$JOBS" libz.a
make install DESTDIR="$OUT"
rm -rf "$OUT/usr/share"
` + licenseScript(lock.Zlib) + epilogue

var pcre2Script = prelude + `# Static, 8-bit only (what nginx uses), with the JIT compiler: --with-pcre-jit makes nginx
# JIT-compile every regex location and map, several times faster than interpreting them.
export CFLAGS="$CFLAGS -ffile-prefix-map=$WORK=/build/pcre2"
./configure --prefix=/usr --disable-shared --enable-static --enable-jit \
  --enable-pcre2-8 --disable-pcre2-16 --disable-pcre2-32 \
  --disable-pcre2grep-libz --disable-pcre2grep-libbz2 --disable-pcre2test-libreadline
make -j"$JOBS" libpcre2-8.la
make install-libLTLIBRARIES install-nodist_includeHEADERS install-includeHEADERS DESTDIR="$OUT"
rm -f "$OUT"/usr/lib/*.la
` + licenseScript(lock.PCRE2) + epilogue

var opensslScript = prelude + `# Static libraries only (no-shared), built once into OUT and linked by nginx with -I/-L, so
# changing nginx never rebuilds OpenSSL (nginx's --with-openssl=DIR would, on every configure).
#   no-module        providers (default, legacy) are built into libcrypto, not loadable .so
#                    files that a static nginx could not find anyway
#   no-tests no-docs nothing of the test suite or the manuals is built
#   enable-ec_nistp_64_gcc_128  constant-time 64-bit P-224/P-256/P-521 (needs __int128,
#                    which GCC has on both amd64 and arm64): faster ECDHE and ECDSA
#   enable-ktls      lets "ssl_conf_command Options KTLS" hand TLS records to the kernel
#                    (sendfile over TLS); it does nothing unless configured
# --openssldir=/etc/ssl is where the image's CA bundle lives (distroless and Debian agree);
# it is compiled in as the default certificate and openssl.cnf location.
# CFLAGS and LDFLAGS come from the environment; they replace OpenSSL's own -O3 -Wall.
./Configure "$OPENSSL_TARGET" --prefix=/usr --openssldir=/etc/ssl --libdir=lib \
  no-shared no-module no-tests no-docs enable-ec_nistp_64_gcc_128 enable-ktls
make -j"$JOBS" build_libs
make install_dev DESTDIR="$OUT"
rm -rf "$OUT/usr/share"
` + licenseScript(lock.OpenSSL) + epilogue

// preludeAnyTar is prelude for the optional components' stages: tar -xf detects the
// compression, since Debian serves some repacked sources as .tar.xz. (The first four stages
// keep prelude as it is: a changed script is a new stage identity, and a rebuilt OpenSSL.)
const preludeAnyTar = `umask 022
mkdir src
tar -xf "$SRC" -C src --strip-components=1 --no-same-owner
cd src
`

// moduleLibraryScript is the stage script of a third-party module's library (a library row
// of the component table, lock.Specs), "" for a library this package has no script for
// (TestModulesHaveScripts).
func moduleLibraryScript(component string) string {
	switch component {
	case lock.Brotli:
		return brotliScript
	case lock.Zstd:
		return zstdScript
	case lock.Libmaxminddb:
		return libmaxminddbScript
	}
	return ""
}

var brotliScript = preludeAnyTar + `# Static, encoder only (nginx compresses; it never decodes brotli). brotli builds with CMake,
# which no other stage needs, and its library is two directories of C files: compiled here
# directly, in a fixed order, into one libbrotlienc.a holding the common part too, because
# ngx_brotli links just -lbrotlienc when it is given a prebuilt library.
export CFLAGS="$CFLAGS -ffile-prefix-map=$WORK=/build/brotli"
mkdir obj
for f in c/common/*.c c/enc/*.c; do
  d=${f#c/}
  echo "$f obj/${d%%/*}_$(basename "$f" .c).o"
done | xargs -P "$JOBS" -n 2 sh -c 'cc $CFLAGS -Ic/include -c "$0" -o "$1"'
ar rcD libbrotlienc.a $(ls obj/*.o | LC_ALL=C sort)
install -D -m 0644 libbrotlienc.a "$OUT/usr/lib/libbrotlienc.a"
mkdir -p "$OUT/usr/include"
cp -R c/include/brotli "$OUT/usr/include/brotli"
` + licenseScript(lock.Brotli) + epilogue

var zstdScript = preludeAnyTar + `# Static only, without the legacy (pre-v0.8) format decoders: nginx compresses with it.
export CFLAGS="$CFLAGS -ffile-prefix-map=$WORK=/build/zstd"
make -C lib -j"$JOBS" libzstd.a ZSTD_LEGACY_SUPPORT=0
make -C lib install-static install-includes PREFIX=/usr DESTDIR="$OUT" ZSTD_LEGACY_SUPPORT=0
` + licenseScript(lock.Zstd) + epilogue

var libmaxminddbScript = preludeAnyTar + `# Static, the library only (no mmdblookup, no tests). Its build is CMake or autotools (and
# its tag archives carry no configure); neither is needed for two C files: compiled here
# directly, with the configuration header its build would write (unsigned __int128 exists
# on amd64 and arm64 with GCC, so neither uint128 fallback is used).
export CFLAGS="$CFLAGS -ffile-prefix-map=$WORK=/build/libmaxminddb"
sed -e 's|^#undef MMDB_UINT128_IS_BYTE_ARRAY|#define MMDB_UINT128_IS_BYTE_ARRAY 0|' \
  include/maxminddb_config.h.in > include/maxminddb_config.h
version=$(sed -n '/^project(maxminddb/,/)/s/^ *VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "libmaxminddb: no version in CMakeLists.txt" >&2; exit 1; }
for f in maxminddb data-pool; do
  cc $CFLAGS -DPACKAGE_VERSION="\"$version\"" -Iinclude -c "src/$f.c" -o "$f.o"
done
ar rcD libmaxminddb.a maxminddb.o data-pool.o
install -D -m 0644 libmaxminddb.a "$OUT/usr/lib/libmaxminddb.a"
install -D -m 0644 include/maxminddb.h "$OUT/usr/include/maxminddb.h"
install -m 0644 include/maxminddb_config.h "$OUT/usr/include/maxminddb_config.h"
` + licenseScript(lock.Libmaxminddb) + epilogue

// moduleSourceScript stages a third-party nginx module's verified source as OUT/src: the
// nginx stage compiles it (--add-module) with nginx's own flags.
func moduleSourceScript(component string) string {
	return `umask 022
mkdir -p "$OUT/src"
tar -xf "$SRC" -C "$OUT/src" --strip-components=1 --no-same-owner
cd "$OUT/src"
` + licenseScript(component) + epilogue
}

// moduleSetup is the nginx stage's lines that put a third-party module's source where its
// configure flag points (../NAME, beside nginx's source) and show it its library, by module
// component (a lock.KindModule row of the component table); "" for one this package has no
// lines for (TestModulesHaveScripts). A module without a library whose configure flag is
// --add-module=../<its component name> needs no lines of its own here.
func moduleSetup(component string) string {
	switch component {
	case lock.NgxBrotli:
		return ngxBrotliSetup
	case lock.ZstdNginxModule:
		return zstdNginxModuleSetup
	case lock.NgxGeoIP2:
		return geoip2Setup
	}
	if spec, ok := lock.SpecOf(component); ok && spec.Kind == lock.KindModule && len(spec.Requires) == 0 &&
		spec.ConfigureFlag == "--add-module=../"+component {
		// A module that needs nothing but nginx (echo, fancyindex): its source beside
		// nginx's, where its configure flag points.
		return fmt.Sprintf("cp -R \"$%s/src\" ../%s\n", DepVar(component), component)
	}
	return ""
}

var ngxBrotliSetup = `# ngx_brotli looks for brotli's headers in its deps/brotli/c (a git submodule upstream,
# absent from release archives); a copy of the brotli stage's headers there makes it link
# the static library instead (-lbrotlienc, found through LIBRARY_PATH).
cp -R "$DEP_NGX_BROTLI/src" ../ngx_brotli
mkdir -p ../ngx_brotli/deps/brotli/c
cp -R "$DEP_BROTLI/usr/include" ../ngx_brotli/deps/brotli/c/include
export LIBRARY_PATH="$LIBRARY_PATH:$DEP_BROTLI/usr/lib"
`

var zstdNginxModuleSetup = `# The zstd module takes its library from ZSTD_INC and ZSTD_LIB (read by its config, not
# recorded by nginx -V) and prefers the static libzstd.a there.
cp -R "$DEP_ZSTD_NGINX_MODULE/src" ../zstd_nginx_module
export ZSTD_INC="$DEP_ZSTD/usr/include" ZSTD_LIB="$DEP_ZSTD/usr/lib"
`

var geoip2Setup = `# The geoip2 module's config test links -lmaxminddb: the libmaxminddb stage's static library
# and headers, through the search paths (not recorded by nginx -V).
cp -R "$DEP_NGX_HTTP_GEOIP2_MODULE/src" ../ngx_http_geoip2_module
export CPATH="$CPATH:$DEP_LIBMAXMINDDB/usr/include" LIBRARY_PATH="$LIBRARY_PATH:$DEP_LIBMAXMINDDB/usr/lib"
`

// nginxScript configures nginx for the runtime contract (see /usr/sbin/nginx and /etc/nginx
// in the image) against the static prefixes.
func nginxScript(st stack, moduleFlags, moduleNames []string) string {
	return nginxScriptWith(st, moduleFlags, moduleNames, "")
}

// nginxScriptWith is nginxScript with lines run after configure, before make (the pgo
// mode's profile copy: configure makes objs/).
func nginxScriptWith(st stack, moduleFlags, moduleNames []string, afterConfigure string) string {
	build, confs := nginxBuild(st, moduleFlags, moduleNames)
	var b strings.Builder
	b.WriteString(prelude)
	b.WriteString(build)
	b.WriteString(afterConfigure)
	b.WriteString(`make -j"$JOBS"
make install DESTDIR="$OUT"
strip --strip-all "$OUT/usr/sbin/nginx"
`)
	b.WriteString(licenseScript(lock.Nginx))
	b.WriteString(libcryptLicenseScript)
	b.WriteString(`

# Lay OUT out as the image's root (see the runtime contract).
cd "$OUT"
rmdir dev                       # made by make install for the /dev/stderr log "directory"
rm -f etc/nginx/*.default
mkdir -p usr/share/nginx
mv etc/nginx/html usr/share/nginx/html
install -m 0644 "$WORK/files/nginx.conf" etc/nginx/nginx.conf
install -m 0644 "$WORK/files/index.html" usr/share/nginx/html/index.html
mkdir -p etc/nginx/conf.d etc/nginx/tls etc/nginx/compression.d var/cache/nginx run/nginx
# The licenses of what is linked into nginx, as each stage installed them from its source.
`)
	for _, c := range linkedComponents(st, moduleNames) {
		fmt.Fprintf(&b, "cp -R \"$%s/%s/%s\" %s/\n", DepVar(c), LicenseDir, c, LicenseDir)
	}
	for _, c := range confs {
		fmt.Fprintf(&b, "install -m 0644 \"$WORK/files/%s\" etc/nginx/%s\n", c, c)
	}
	b.WriteString(epilogue)
	return b.String()
}

// LibcryptLicense is the directory under LicenseDir that holds the licence of the libcrypt.a
// nginx links statically (-l:libcrypt.a, see nginxLDOpt), named as the image's SBOM names
// that component.
const LibcryptLicense = "libcrypt"

// libcryptLicenseScript installs libcrypt.a's licence: it comes from the builder's
// libcrypt-dev (libxcrypt), not from a source this program verifies, so its texts are the
// package's own: Debian's copyright file (the holders, and which files are under which
// licence) and the LGPL 2.1 text that file points to in common-licenses. A builder without
// them fails the stage, naming the file, rather than shipping a binary without its licence.
var libcryptLicenseScript = `# libxcrypt's licence (libcrypt.a from the builder's ` + LibcryptPackage + `), for /` + LicenseDir + `/` + LibcryptLicense + ` in the image.
mkdir -p "$OUT/` + LicenseDir + `/` + LibcryptLicense + `"
for f in /usr/share/doc/` + LibcryptPackage + `/copyright /usr/share/common-licenses/LGPL-2.1; do
  if [ ! -f "$f" ]; then echo "libcrypt: the builder has no $f (the licence of the libcrypt.a linked into nginx)" >&2; exit 1; fi
done
install -m 0644 /usr/share/doc/` + LibcryptPackage + `/copyright "$OUT/` + LicenseDir + `/` + LibcryptLicense + `/copyright"
install -m 0644 /usr/share/common-licenses/LGPL-2.1 "$OUT/` + LicenseDir + `/` + LibcryptLicense + `/LGPL-2.1"
`

// linkedComponents are the lock components compiled into nginx besides nginx itself, in
// build order: the libraries, and each third-party module's source and library.
func linkedComponents(st stack, moduleNames []string) []string {
	out := []string{st.zlib, lock.PCRE2, st.tls}
	for _, name := range moduleNames {
		if m, ok := lookupModule(name); ok {
			out = append(out, m.Components...)
		}
	}
	return out
}

// nginxBuild is the nginx stage's environment and configure run (after prelude, before
// make), and the module configuration files the stage installs.
func nginxBuild(st stack, moduleFlags, moduleNames []string) (string, []string) {
	args := []string{
		"--prefix=/etc/nginx",
		"--sbin-path=/usr/sbin/nginx",
		"--conf-path=/etc/nginx/nginx.conf",
		// Errors go to stderr from the first message, before nginx.conf is read, so nothing
		// is ever written to a log file inside a read-only image.
		"--error-log-path=/dev/stderr",
		"--http-log-path=/dev/stdout",
		"--pid-path=/run/nginx/nginx.pid",
		"--lock-path=/run/nginx/nginx.lock",
		"--http-client-body-temp-path=/var/cache/nginx/client_body",
		"--http-proxy-temp-path=/var/cache/nginx/proxy",
		"--http-fastcgi-temp-path=/var/cache/nginx/fastcgi",
		"--http-uwsgi-temp-path=/var/cache/nginx/uwsgi",
		"--http-scgi-temp-path=/var/cache/nginx/scgi",
		// The image runs as 65532 (distroless "nonroot"), where nginx ignores the user. If it
		// is started as root anyway, workers drop to the same unprivileged account instead of
		// the compiled-in default "nobody".
		"--user=nonroot",
		"--group=nonroot",
		"--without-mail_pop3_module", "--without-mail_imap_module", "--without-mail_smtp_module",
	}
	args = append(args, moduleFlags...)
	var b strings.Builder
	b.WriteString(`# The dependencies' headers and static libraries reach the compiler through CPATH and
# LIBRARY_PATH (searched before the system's): nginx records its configure arguments in the
# binary (nginx -V), and executor paths must not end up there. CFLAGS stays unset on purpose:
# a set CFLAGS replaces nginx's own -W -Wall -Werror -g, and would also be used for its
# feature tests (where -Werror on a test program's harmless warning makes a feature look
# absent). nginx compiles its sources by relative paths, so __FILE__ holds no build path;
# the only paths left are in the -g debug info, which strip removes. That is also why this
# stage has no -ffile-prefix-map: in --with-cc-opt it would itself put $WORK into nginx -V.
`)
	fmt.Fprintf(&b, "export CPATH=\"$%s/usr/include:$DEP_PCRE2/usr/include:$%s/usr/include\"\n", DepVar(st.tls), DepVar(st.zlib))
	fmt.Fprintf(&b, "export LIBRARY_PATH=\"$%s/usr/lib:$DEP_PCRE2/usr/lib:$%s/usr/lib\"\n", DepVar(st.tls), DepVar(st.zlib))
	b.WriteString("unset CFLAGS\n")
	var confs []string
	for _, name := range moduleNames {
		if m, _ := lookupModule(name); len(m.Components) > 0 {
			b.WriteString(moduleSetup(m.Components[0]))
			if m.Conf != "" { // geoip2, echo and fancyindex ship none
				confs = append(confs, m.Conf)
			}
		}
	}
	b.WriteString(st.configure + " \\\n")
	for _, a := range args {
		b.WriteString("  " + a + " \\\n")
	}
	b.WriteString(`  --with-cc-opt="$NGINX_CC_OPT" \
  --with-ld-opt="$NGINX_LD_OPT"
`)
	return b.String(), confs
}
