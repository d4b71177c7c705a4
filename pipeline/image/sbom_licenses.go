package image

import "github.com/nginx-forge/nginx-forge/pipeline/lock"

// licenses are the SPDX license expressions (SPDX license list 3.23 or later) of what is
// compiled into nginx: the SBOM's declared and concluded licence of each of these packages,
// and the terms of the image's org.opencontainers.image.licenses. Each is read from the
// license file the image ships for it (plan.LicenseFiles, installed under
// /usr/share/licenses/<component>/ from the verified source), so a change of licence upstream
// is a change here in the same update. A component of the lock without an entry fails
// TestLicensesCoverEveryComponent.
var licenses = map[string]string{
	// LICENSE: the two-clause BSD licence of Igor Sysoev and Nginx, Inc.
	lock.Nginx: "BSD-2-Clause",
	// LICENSE.txt: the Apache License 2.0, OpenSSL's licence since 3.0.
	lock.OpenSSL: "Apache-2.0",
	// LICENCE.md (LICENCE before 10.45): "BSD" with one exemption for binary library-like
	// packages (the binary-redistribution clause does not reach software that merely includes
	// such a package); LICENCE.md names this expression itself, and PCRE2-exception is in the
	// SPDX license list since 3.23.
	lock.PCRE2: "BSD-3-Clause WITH PCRE2-exception",
	// LICENSE (README before 1.2.13): the zlib licence.
	lock.Zlib: "Zlib",
	// LICENSE.md: the zlib licence (zlib-ng keeps zlib's).
	lock.ZlibNG: "Zlib",
	// LICENSE: AWS-LC's own files are Apache-2.0 OR ISC; it also keeps BoringSSL's ISC and
	// Apache-2.0 code, OpenSSL-derived files (Apache-2.0, SSLeay notices), the ML-KEM/ML-DSA
	// code (Apache-2.0 OR ISC OR MIT), and MIT, MIT-0 and BSD-3-Clause third-party parts, each
	// named in that file by its SPDX identifier. Together, conservatively: all of them.
	lock.AWSLC: "Apache-2.0 AND ISC AND MIT AND BSD-3-Clause",
	// libxcrypt's libcrypt.a from the builder's libcrypt-dev, whose copyright file the image
	// ships (plan.LibcryptLicense) with the LGPL 2.1 text: "The overall license for
	// libxcrypt is the GNU Lesser General Public License, version 2.1 (or, at your option,
	// any later version)", and the files of every hashing method the static library holds
	// (Debian and Ubuntu build them all) are also under 3-clause BSD (DES, PBKDF1-SHA1),
	// 2-clause BSD (SHA-2, yescrypt, GOST, NTHASH, SunMD5, HMAC-SHA1) and 0-clause BSD
	// (yescrypt, scrypt, GOST-yescrypt), or public domain (bcrypt, MD5, SHA-1, sha256crypt),
	// which asks nothing and has no SPDX identifier.
	Libcrypt: "LGPL-2.1-or-later AND BSD-3-Clause AND BSD-2-Clause AND 0BSD",
	// google/brotli's LICENSE: the MIT licence.
	lock.Brotli: "MIT",
	// google/ngx_brotli's LICENSE: nginx's two-clause BSD text, with Google added.
	lock.NgxBrotli: "BSD-2-Clause",
	// facebook/zstd ships LICENSE (three-clause BSD) and COPYING (GPL version 2, without "or
	// any later version"); its README: "dual-licensed under BSD OR GPLv2", the recipient's
	// choice. The image ships both texts.
	lock.Zstd: "BSD-3-Clause OR GPL-2.0-only",
	// tokers/zstd-nginx-module's LICENSE: "BSD 2-Clause License".
	lock.ZstdNginxModule: "BSD-2-Clause",
}

// licenseOr is the licence of component n, or NOASSERTION when this program does not know
// it (a component of the lock always has one: TestLicensesCoverEveryComponent).
func licenseOr(n string) string {
	if l, ok := licenses[n]; ok {
		return l
	}
	return "NOASSERTION"
}
