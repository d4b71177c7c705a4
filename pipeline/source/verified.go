package source

import (
	"fmt"
	"time"
)

// Verified is a component's tarball after every check passed.
type Verified struct {
	// Name and Version are the component's, from the lock.
	Name    string
	Version string
	// Path is the verified tarball in the content-addressed cache
	// (<cache>/sha256/<hex>/<file name>). Treat it as read-only: it is shared by builds.
	Path string
	// Prepared is what a build stage reads: the archive pipeline/unpack wrote from the files
	// it unpacked from Path under its policy, in this run (<cache>/prepared/<its sha256>.tar.gz).
	// No stage ever unpacks Path itself.
	Prepared string
	// Top is the archive's one top directory.
	Top string
	// SHA256 is the verified digest (lower-case hex), equal to the lock's; for a git source,
	// the digest of the archive of its verified tree.
	SHA256 string
	// Tree and Commit are a git source's pinned tree (verified over the archive's files) and
	// commit; "" for a tarball.
	Tree, Commit string
	// URL is where the tarball was fetched from (the mirror's URL with a mirror), or "" when
	// it came from the cache.
	URL string
	// Signed reports whether a PGP signature was verified. It is false only for a component
	// that has no signature in the lock: such a component rests on its checksum alone, and
	// the caller should say so.
	Signed bool
	// Unsigned is the lock's reason for an unsigned component ("" when it gives none).
	Unsigned string
	// SignedBy is the primary fingerprint of the pinned key that made the signature.
	SignedBy string
	// SignedAt is when the signature says it was made.
	SignedAt time.Time
	// SignerVendored reports whether the signer's key is vendored (pipeline/lock/keys)
	// rather than fetched from a key server or mirror.
	SignerVendored bool
}

// String describes the result in one line for logs.
func (v Verified) String() string {
	if v.Tree != "" {
		return fmt.Sprintf("%s %s: git commit %s, tree %s verified over the files built; NO signature, the lock says why: %s", v.Name, v.Version, v.Commit, v.Tree, v.Unsigned)
	}
	if !v.Signed && v.Unsigned != "" {
		return fmt.Sprintf("%s %s: sha256 %s verified; NO signature (checksum only), the lock says why: %s", v.Name, v.Version, v.SHA256, v.Unsigned)
	}
	if !v.Signed {
		return fmt.Sprintf("%s %s: sha256 %s verified; NO signature pinned in the lock and no reason given (checksum only)", v.Name, v.Version, v.SHA256)
	}
	key := "fetched key"
	if v.SignerVendored {
		key = "vendored key"
	}
	return fmt.Sprintf("%s %s: sha256 %s verified; signed by %s (%s) on %s", v.Name, v.Version, v.SHA256, v.SignedBy, key, v.SignedAt.UTC().Format("2006-01-02"))
}
