package image

import "github.com/nginx-forge/nginx-forge/pipeline/lock"

// libcryptLicense is the licence of libxcrypt's libcrypt.a from the builder's libcrypt-dev,
// whose copyright file the image ships (plan.LibcryptLicense) with the LGPL 2.1 text: "The
// overall license for libxcrypt is the GNU Lesser General Public License, version 2.1 (or,
// at your option, any later version)", and the files of every hashing method the static
// library holds (Debian and Ubuntu build them all) are also under 3-clause BSD (DES,
// PBKDF1-SHA1), 2-clause BSD (SHA-2, yescrypt, GOST, NTHASH, SunMD5, HMAC-SHA1) and 0-clause
// BSD (yescrypt, scrypt, GOST-yescrypt), or public domain (bcrypt, MD5, SHA-1,
// sha256crypt), which asks nothing and has no SPDX identifier. It is not a lock component
// (the builder image brings it), so the component table does not have it.
const libcryptLicense = "LGPL-2.1-or-later AND BSD-3-Clause AND BSD-2-Clause AND 0BSD"

// licenseOf is the SPDX licence expression (SPDX license list 3.23 or later) of n, a lock
// component or Libcrypt: the SBOM's declared and concluded licence of its package and a
// term of the image's org.opencontainers.image.licenses. A component's comes from the
// component table (lock.Spec.License, read from the licence files the image ships); "" for
// a name this program does not know.
func licenseOf(n string) string {
	if n == Libcrypt {
		return libcryptLicense
	}
	s, _ := lock.SpecOf(n)
	return s.License
}

// licenseOr is the licence of component n, or NOASSERTION when this program does not know
// it (a component of the lock always has one: TestLicensesCoverEveryComponent).
func licenseOr(n string) string {
	if l := licenseOf(n); l != "" {
		return l
	}
	return "NOASSERTION"
}
