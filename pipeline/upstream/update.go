package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// Fetcher downloads and verifies sources; *source.Fetcher implements it.
//
// FetchNew downloads a release the lock does not pin yet: c carries the new version's URL
// and signature URL, the pinned signer fingerprints, and an empty SHA256. It downloads the
// tarball and, when c.Signature is set, the signature, verifies the signature with a key
// whose fingerprint is pinned, and returns the tarball's SHA-256, the signer and the
// signature's creation time.
//
// Fetch verifies a release the lock pins (checksum and signature): the update uses it to
// learn, from a verified signature, when the locked release was signed. For a component
// pinned by git commit it is how the new commit is verified: it fetches the commit (or the
// mirror's archive of it) and checks that the files are the entry's tree.
//
// SignerKey returns a pinned signer's public key for vendoring (see source.SignerKey): the
// update writes it beside the lock when a new release is signed by a pinned key that is not
// vendored yet.
type Fetcher interface {
	FetchNew(ctx context.Context, c lock.Component) (source.Verified, error)
	Fetch(ctx context.Context, c lock.Component) (source.Verified, error)
	SignerKey(ctx context.Context, fpr string) (source.SignerKey, error)
	// RefreshKey fetches a current copy of a vendored key and verifies with it from then on
	// (see source.RefreshKey): for a release signed after the vendored copy's expiry.
	RefreshKey(ctx context.Context, fpr string) (source.SignerKey, error)
}

// Applied is one change made to the lock, with what was verified before it was made (the
// update pull request's body lists these, see PRBody).
type Applied struct {
	Name     string // component name, or "builder image" / "runtime image"
	Old, New string // versions, or digests for images

	// Components only.
	URL          string // the new tarball's URL (as in the lock)
	SHA256       string // the new tarball's checksum
	Signed       bool   // the new tarball's signature was verified
	SignatureURL string // the signature file (as in the lock)
	SignedBy     string // the pinned fingerprint that made it
	// SignerVendored: the signer's key was vendored before this update. When it was not,
	// NewKey is the key this update vendors (written beside the lock with it).
	SignerVendored bool
	NewKey         *source.SignerKey
	// RefreshedKey: NewKey is a current copy of a key already vendored, whose vendored copy
	// said it had expired before this release was signed (upstream extended it since); it
	// replaces the file.
	RefreshedKey bool
	SignedAt     time.Time // when the new signature was made
	// LockedSignedAt is when the locked release's signature was made (zero when the locked
	// release had no signature): the new one must not be older.
	LockedSignedAt time.Time
	// GainedSignature: the lock had no signature for this component ("unsigned"), upstream
	// publishes one for the new release, it verified with a vendored key, and the lock now
	// pins it (the "unsigned" reason is gone).
	GainedSignature bool
	// Unsigned is the lock's reason, kept, for a component that still has no signature.
	Unsigned string
	// NoSignatureAt is where a signature of the still unsigned new release was looked for
	// and not found; "" when upstream publishes no signatures for the component (no
	// lock.Spec.SignatureSuffix), so none was looked for.
	NoSignatureAt string
	TopDir        string // the tarball's single top-level directory, e.g. "nginx-1.28.0"

	// FetchedFrom is where the new tarball, or the commit whose tree was checked, was
	// fetched from (the mirror's URL with --mirror, credentials redacted); "" from the source
	// cache, which holds only verified files.
	FetchedFrom string

	// Components pinned by git commit only (URL, SHA256, the signature fields and TopDir are
	// empty): the new pin (tag, commit, tree), the locked one, and the lock's "unsigned"
	// reason before the update replaced the locked tag and version in it ("" when it named
	// neither).
	Git, OldGit *lock.Git
	UnsignedWas string

	// Images only.
	Ref       string   // the tag followed
	Platforms []string // what the pinned index covers, e.g. linux/amd64, linux/arm64
	// Snapshot is, for the builder, the archive snapshot written (lock.SnapshotLayout; ""
	// unchanged), and OldSnapshot the one it replaced ("" none).
	Snapshot, OldSnapshot string

	// DroppedProfile is the platform of a recorded PGO profile Apply removed (Old is its
	// training key): it was trained on the sources or builder this update replaces.
	DroppedProfile string
}

// IsImage reports whether a is a base image change.
func (a Applied) IsImage() bool { return a.Ref != "" }

var (
	errReplay         = errors.New("signed before the locked release")
	errWrongTopDir    = errors.New("wrong top directory")
	errArchivePolicy  = errors.New("its archive breaks the unpack policy")
	errUnsignedReason = errors.New("unsigned reason names the locked version")
	errPlatforms      = errors.New("index lacks a platform")
)

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// updater turns a Report into a new lock, refusing any release it cannot vouch for.
type updater struct {
	// Fetcher downloads and verifies tarballs and signatures (required).
	Fetcher Fetcher
	// Images reads the index a moved base image tag points at (required when the report
	// has image updates).
	Images *ImageResolver
	// Vendored are the fingerprints of the keys a new release may be signed by. nil means
	// the keys vendored in pipeline/lock/keys (lock.VendoredFingerprints), which is what
	// production uses; tests set their generated keys here because the embedded keys'
	// private halves are upstream's.
	Vendored []string
	// Platforms are the platforms every build targets (Run.Platforms): a base image index
	// must cover each of them, or one architecture's build would have no base. Required to
	// apply an image update.
	Platforms []string
	// Mirror, when set, is where the signature of an unsigned component's new release is
	// looked for (Mirror/<file name>), as the fetcher does (Run.Mirror).
	Mirror string
	// HTTP is the client for that look-up (default: 60 s timeout).
	HTTP *http.Client
	// KeysDir is where UpdateFile vendors the key of a pinned signer that was not vendored
	// yet ("" is the keys directory beside the lock file, lock.KeysDirBeside).
	KeysDir string
	// Sink receives each check as a Detail note (nil: discarded).
	Sink progress.Sink
}

// vendored returns the fingerprints a new release may be signed by.
func (u *updater) vendored() []string {
	if u.Vendored != nil {
		return u.Vendored
	}
	var out []string
	for _, fp := range lock.VendoredFingerprints() {
		if _, ok := lock.VendoredKey(fp); ok {
			out = append(out, fp)
		}
	}
	return out
}

// sink is where the checks' lines go (Sink; an updater made without one discards them).
func (u *updater) sink() progress.Sink { return orDiscard(u.Sink) }

// Apply returns a copy of l with the updates of rep that can be vouched for, and the ones
// refused. Each component and base image is decided on its own: a refusal leaves that entry
// as it was and the others still move. For a component that moves, the lock gets the new
// version, URLs derived from the old ones by version substitution, and the checksum of the
// verified download; for a base image, the new index digest. A new release is refused when
//   - its signature cannot be verified (or, for a signed component, is missing), including
//     a signature by a key whose fingerprint the lock does not pin,
//   - its signer's key is pinned but cannot be obtained with a valid self-signature,
//   - its signature is older than the locked release's,
//   - its tarball's top-level directory is not <name>-<new version> (topDirName),
//   - it stays unsigned and the lock's "unsigned" reason names the locked version (the reason
//     was written about that release and would not be known to hold for the new one);
//
// and a base image when its index lacks a platform the build targets. A component pinned by
// git commit moves to the commit and tree the check resolved for its new release's tag once
// the fetcher verified that commit's files are that tree (see gitComponent); a different
// tree is refused. Any release that would make the lock invalid with the rest of it as it is
// (nginx older than lock.MinNginxForAWSLC in an AWS-LC lock) is refused before anything is
// fetched. A release signed by a pinned key that is not vendored moves, and its Applied
// carries the key (NewKey) for the caller to vendor with the lock (UpdateFile does). A component whose lookup failed (an
// entry of rep.Failed) is refused as well. The error is for what no single entry explains.
func (u *updater) Apply(ctx context.Context, l *lock.Lock, rep *Report) (*lock.Lock, []Applied, []Refusal, error) {
	if u.Fetcher == nil {
		return nil, nil, nil, errors.New("upstream.Updater: no Fetcher")
	}
	b, err := l.Marshal()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := lock.Parse(b)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("copying the lock: %w", err)
	}
	done, refused := u.applyComponents(ctx, out, rep)
	images, imgRefused, err := u.applyImages(ctx, out, rep)
	if err != nil {
		return nil, nil, nil, err
	}
	done = dropStaleProfiles(out, append(done, images...))
	if err := out.Validate(); err != nil {
		return nil, nil, nil, fmt.Errorf("the updated lock is invalid: %w", err)
	}
	return out, done, append(refused, imgRefused...), nil
}

// image checks that the index a base image tag now points at covers every platform.
func (u *updater) image(ctx context.Context, ir ImageReport) (Applied, error) {
	if u.Images == nil {
		return Applied{}, fmt.Errorf("no image resolver to check the platforms of %s", ir.Latest)
	}
	if len(u.Platforms) == 0 {
		return Applied{}, fmt.Errorf("no platforms to check the index of %s against (Run.Platforms: the platforms builds target)", ir.Latest)
	}
	plats, err := u.Images.IndexPlatforms(ctx, ir.Ref, ir.Latest, u.Platforms)
	if err != nil {
		return Applied{}, err
	}
	u.sink().Send(progress.Detailf("%s image %s: index %s covers %s", ir.Role, ir.Ref, ir.Latest, strings.Join(plats, ", ")))
	return Applied{Name: ir.Role + " image", New: ir.Latest, Ref: ir.Ref, Platforms: plats}, nil
}

// component fetches and vets old's new release v and returns the lock entry for it.
func (u *updater) component(ctx context.Context, old lock.Component, v string) (lock.Component, Applied, error) {
	next, err := bump(old, v)
	if err != nil {
		return lock.Component{}, Applied{}, err
	}
	a := Applied{Name: old.Name, Old: old.Version, New: v, URL: next.URL}
	vendored := u.vendored()

	// A component the lock marks unsigned gains a signature when upstream publishes one for
	// the new release: it is then verified like any other (by a vendored key) and pinned.
	// The table's SignatureSuffix is the name upstream gives a release's detached signature
	// (nginx.org, OpenSSL's and zlib's GitHub releases publish .asc, PCRE2's and zstd's
	// .sig); a component whose upstream signs nothing has none, and stays unsigned.
	if suffix := upstreamOf(old.Name).SignatureSuffix; old.Signature == nil && suffix != "" {
		sigURL := next.URL + suffix
		found, err := u.published(ctx, sigURL)
		if err != nil {
			return lock.Component{}, Applied{}, err
		}
		if found {
			next.Signature = &lock.Signature{URL: sigURL, Fingerprints: vendored}
			a.GainedSignature = true
		} else {
			a.NoSignatureAt = sigURL
			u.sink().Send(progress.Detailf("%s %s: no signature at %s; the lock keeps its unsigned reason", old.Name, v, sigURL))
		}
	} else if old.Signature == nil {
		u.sink().Send(progress.Detailf("%s %s: upstream publishes no signatures; the lock keeps its unsigned reason", old.Name, v))
	}
	// The reason stays in the lock (and goes into the SBOM) for the new release, so it must
	// still be true of it: one that names the locked version is about that release.
	if next.Signature == nil && containsVersion(old.Unsigned, old.Version) {
		return lock.Component{}, Applied{}, fmt.Errorf("refused: the new release stays unsigned, and the lock's \"unsigned\" reason names the locked version %s, so it is not known to hold for %s: %q (%w)",
			old.Version, v, old.Unsigned, errUnsignedReason)
	}

	ver, refreshed, err := u.fetchNew(ctx, next)
	if err != nil {
		var ue *unpack.Error
		if errors.As(err, &ue) {
			return lock.Component{}, Applied{}, fmt.Errorf("refused: %w (%w)", err, errArchivePolicy)
		}
		if next.Signature != nil {
			return lock.Component{}, Applied{}, fmt.Errorf("refused: the new release cannot be verified: %w", err)
		}
		return lock.Component{}, Applied{}, err
	}
	if !sha256RE.MatchString(ver.SHA256) {
		return lock.Component{}, Applied{}, fmt.Errorf("the fetcher returned %q, not a SHA-256", ver.SHA256)
	}
	next.SHA256 = ver.SHA256
	a.SHA256 = ver.SHA256
	a.FetchedFrom = safeio.RedactURL(ver.URL)

	if next.Signature != nil {
		if err := u.vetSignature(ctx, old, &next, &a, ver, refreshed); err != nil {
			return lock.Component{}, Applied{}, err
		}
	} else {
		a.Unsigned = next.Unsigned
	}

	// The fetcher unpacked it under pipeline/unpack's policy (one top directory among its
	// rules) before anything was cached.
	top := ver.Top
	if want := topDirName(old.Name, v); top != want {
		return lock.Component{}, Applied{}, fmt.Errorf("refused: its tarball %s unpacks into %s/, not %s/: the file is not the release it is named after "+
			"(the build strips the top directory, so it would build whatever is inside) (%w)",
			next.FileName(), top, want, errWrongTopDir)
	}
	a.TopDir = top
	u.sink().Send(progress.Detailf("%s %s: sha256 %s, top directory %s/", old.Name, v, ver.SHA256, top))
	return next, a, nil
}

// vetSignature checks what the verified signature of next (a release of old) says and
// records it in a: the signer's key is vendored (or vendored by this change), and the
// signature is not older than the locked release's (a replay).
func (u *updater) vetSignature(ctx context.Context, old lock.Component, next *lock.Component, a *Applied, ver source.Verified, refreshed *source.SignerKey) error {
	if !ver.Signed {
		return errors.New("refused: the lock pins a signature but the fetcher did not verify one")
	}
	a.Signed, a.SignedBy, a.SignedAt, a.SignatureURL = true, ver.SignedBy, ver.SignedAt, next.Signature.URL
	a.SignerVendored = ver.SignerVendored || slices.Contains(u.vendored(), ver.SignedBy)
	if !a.SignerVendored {
		// The lock pins this fingerprint (the fetcher verifies only with pinned keys), so
		// the key is the one a reviewer already accepted by its hash. Vendor it with this
		// change, so that builds of the new lock never need a key server, and so that the
		// pull request shows it for review.
		k, err := u.Fetcher.SignerKey(ctx, ver.SignedBy)
		if err != nil {
			return fmt.Errorf("refused: its signer %s is pinned but not vendored, and its key cannot be vendored: %w", ver.SignedBy, err)
		}
		if !k.Vendored {
			a.NewKey = &k
		}
	}
	if refreshed != nil {
		a.NewKey, a.RefreshedKey = refreshed, true
	}

	// The new signature must not be older than the locked release's: a release signed
	// before the one we have is an old build under a new name (a replay), whatever its
	// version number says. The locked date comes from verifying the locked release again
	// (checksum and signature), not from the lock: the lock records no date, and a date
	// read from an unverified signature file would prove nothing.
	if old.Signature != nil {
		lv, err := u.Fetcher.Fetch(ctx, old)
		if err != nil {
			return fmt.Errorf("refused: the locked release %s must be verified to learn when it was signed, and it was not: %w", old.Version, err)
		}
		if !lv.Signed {
			return fmt.Errorf("refused: the locked release %s pins a signature but the fetcher did not verify one", old.Version)
		}
		a.LockedSignedAt = lv.SignedAt
		if ver.SignedAt.Before(lv.SignedAt) {
			return fmt.Errorf("refused: its signature %s was made on %s, before the locked %s's (%s): "+
				"a new release signed earlier than the one it replaces is suspect (an older build under a new version?) (%w)",
				next.SignatureFileName(), ver.SignedAt.UTC().Format(time.RFC3339), old.Version, lv.SignedAt.UTC().Format(time.RFC3339), errReplay)
		}
	}
	if a.GainedSignature {
		// Pin the one vendored key that signed, not every vendored key.
		next.Signature.Fingerprints = []string{ver.SignedBy}
	}
	// The lock rejects a component with both a signature and an unsigned reason.
	next.Unsigned = ""
	return nil
}

// UpdateFile applies rep to the lock file and rewrites it in the stable form, with the keys
// of newly vendored signers written to keysDir (lock.KeysDirBeside(file) when ""), before
// the lock. What was refused is returned as a *refusedError, after the rest was written; when
// nothing could be applied, the file is not touched (byte for byte).
func (u *updater) UpdateFile(ctx context.Context, file string, rep *Report) ([]Applied, error) {
	l, before, err := lock.LoadBytes(file)
	if err != nil {
		return nil, err
	}
	return u.updateLoaded(ctx, file, l, before, rep)
}

// updateLoaded is UpdateFile for l, read from file as before (Run.Do reads the lock once).
func (u *updater) updateLoaded(ctx context.Context, file string, l *lock.Lock, before []byte, rep *Report) ([]Applied, error) {
	out, done, refused, err := u.Apply(ctx, l, rep)
	if err != nil {
		return nil, err
	}
	refusedErr := func(wrote bool) error {
		if len(refused) == 0 {
			return nil
		}
		return &refusedError{Refused: refused, Wrote: wrote}
	}
	if len(done) == 0 {
		return nil, refusedErr(false)
	}
	after, err := out.Marshal()
	if err != nil {
		return nil, err
	}
	if bytes.Equal(before, after) {
		return done, refusedErr(false)
	}
	keysDir := u.KeysDir
	if keysDir == "" {
		keysDir = lock.KeysDirBeside(file)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("the run ended before the lock was written (nothing was written): %w", context.Cause(ctx))
	}
	if err := checkKeyTargets(keysDir, done); err != nil {
		return nil, err
	}
	for _, a := range done {
		if a.NewKey == nil {
			continue
		}
		kf, err := lock.WriteKeyFile(keysDir, a.NewKey.Fingerprint, a.NewKey.Armored)
		if err != nil {
			return nil, fmt.Errorf("vendoring key %s: %w (the lock is unchanged)", a.NewKey.Fingerprint, err)
		}
		verb := "vendored"
		if a.RefreshedKey {
			verb = "refreshed"
		}
		u.sink().Send(progress.Detailf("%s: %s the key of %s as %s", a.Name, verb, a.NewKey.Fingerprint, kf))
	}
	if err := out.Write(file); err != nil {
		return nil, err
	}
	return done, refusedErr(true)
}

var _ Fetcher = (*source.Fetcher)(nil)
