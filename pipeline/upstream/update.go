package upstream

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// Fetcher downloads a release the lock does not pin yet and vouches for it; *source.Fetcher
// implements it. c carries the new version's URL and signature URL, the pinned signer
// fingerprints, and an empty SHA256. FetchNew downloads the tarball and, when c.Signature is
// set, the signature, verifies the signature with a key whose fingerprint is pinned, and
// returns the tarball's SHA-256.
type Fetcher interface {
	FetchNew(ctx context.Context, c lock.Component) (source.Verified, error)
}

// Applied is one change made to the lock.
type Applied struct {
	Name     string
	Old, New string // versions, or digests for images
	SHA256   string // the new tarball's checksum (components only)
	Signed   bool   // the new tarball's signature was verified
	SignedBy string // the pinned fingerprint that made it
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Apply returns a copy of l with the updates of rep: for each component, the new version,
// URLs derived from the old ones by version substitution, and the checksum FetchNew returned
// after verifying the download; for each base image, the new digest. Any failure returns an
// error and no lock, so version and checksum only ever change together.
func Apply(ctx context.Context, l *lock.Lock, rep *Report, f Fetcher) (*lock.Lock, []Applied, error) {
	b, err := l.Marshal()
	if err != nil {
		return nil, nil, err
	}
	out, err := lock.Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("copying the lock: %w", err)
	}
	var done []Applied
	for _, cr := range rep.Components {
		if !cr.Update {
			continue
		}
		old := out.MustComponent(cr.Name)
		next, err := Bump(old, cr.Latest)
		if err != nil {
			return nil, nil, err
		}
		ver, err := f.FetchNew(ctx, next)
		sum := ver.SHA256
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w (the lock is unchanged)", cr.Name, cr.Latest, err)
		}
		if next.Signature != nil && !ver.Signed {
			return nil, nil, fmt.Errorf("%s %s: the lock pins a signature but the fetcher did not verify one (the lock is unchanged)", cr.Name, cr.Latest)
		}
		if !sha256RE.MatchString(sum) {
			return nil, nil, fmt.Errorf("%s %s: the fetcher returned %q, not a SHA-256 (the lock is unchanged)", cr.Name, cr.Latest, sum)
		}
		next.SHA256 = sum
		out.SetComponent(next)
		done = append(done, Applied{Name: cr.Name, Old: old.Version, New: next.Version, SHA256: sum, Signed: ver.Signed, SignedBy: ver.SignedBy})
	}
	for _, ir := range rep.Images {
		if !ir.Update || ir.Latest == "" {
			continue
		}
		img := &out.Images.Builder
		if ir.Role == "runtime" {
			img = &out.Images.Runtime
		}
		if img.Ref != ir.Ref {
			return nil, nil, fmt.Errorf("%s image: the report is for %q but the lock has %q", ir.Role, ir.Ref, img.Ref)
		}
		done = append(done, Applied{Name: ir.Role + " image", Old: img.Digest, New: ir.Latest})
		img.Digest = ir.Latest
	}
	if err := out.Validate(); err != nil {
		return nil, nil, fmt.Errorf("the updated lock is invalid: %w", err)
	}
	return out, done, nil
}

// UpdateFile applies rep to the lock file and rewrites it in the stable form. When anything
// fails the file is not touched (byte for byte).
func UpdateFile(ctx context.Context, file string, rep *Report, f Fetcher) ([]Applied, error) {
	before, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading lock file %q: %w", file, err)
	}
	l, err := lock.Parse(before)
	if err != nil {
		return nil, fmt.Errorf("lock file %q: %w", file, err)
	}
	out, done, err := Apply(ctx, l, rep, f)
	if err != nil {
		return nil, err
	}
	if len(done) == 0 {
		return nil, nil
	}
	after, err := out.Marshal()
	if err != nil {
		return nil, err
	}
	if bytes.Equal(before, after) {
		return done, nil
	}
	if err := out.Write(file); err != nil {
		return nil, err
	}
	return done, nil
}

// Bump returns c at version v: the version, the tarball URL and the signature URL with the
// old version replaced by v, and no checksum (the caller must fill it from a verified
// download). A URL that does not contain the old version cannot be derived and is an error.
func Bump(c lock.Component, v string) (lock.Component, error) {
	next := c
	next.Version = v
	next.SHA256 = ""
	u, err := substituteVersion(c.URL, c.Version, v)
	if err != nil {
		return lock.Component{}, fmt.Errorf("%s: url: %w", c.Name, err)
	}
	next.URL = u
	if c.Signature != nil {
		su, err := substituteVersion(c.Signature.URL, c.Version, v)
		if err != nil {
			return lock.Component{}, fmt.Errorf("%s: signature url: %w", c.Name, err)
		}
		sig := *c.Signature
		sig.URL = su
		sig.Fingerprints = append([]string(nil), c.Signature.Fingerprints...)
		next.Signature = &sig
	}
	return next, nil
}

// substituteVersion replaces every whole occurrence of old in raw with new. "Whole" means
// not part of a longer number: 1.3 in 1.3.1 or 10.4 in 10.44 is left alone.
func substituteVersion(raw, old, new string) (string, error) {
	var b strings.Builder
	n := 0
	for i := 0; i < len(raw); {
		j := strings.Index(raw[i:], old)
		if j < 0 {
			b.WriteString(raw[i:])
			break
		}
		start, end := i+j, i+j+len(old)
		if wholeVersion(raw, start, end) {
			b.WriteString(raw[i:start])
			b.WriteString(new)
			n++
		} else {
			b.WriteString(raw[i:end])
		}
		i = end
	}
	if n == 0 {
		return "", fmt.Errorf("%q does not contain version %s, so the new release's URL cannot be derived: edit the lock by hand", raw, old)
	}
	return b.String(), nil
}

func wholeVersion(s string, start, end int) bool {
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	if start > 0 && (isDigit(s[start-1]) || s[start-1] == '.' && start > 1 && isDigit(s[start-2])) {
		return false
	}
	if end < len(s) && isDigit(s[end]) {
		return false
	}
	if end+1 < len(s) && s[end] == '.' && isDigit(s[end+1]) {
		return false
	}
	return true
}

// The source package's fetcher is the production Fetcher.
var _ Fetcher = (*source.Fetcher)(nil)
