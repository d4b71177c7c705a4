package lock

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

var (
	sha256RE      = regexp.MustCompile(`^[0-9a-f]{64}$`)
	fingerprintRE = regexp.MustCompile(`^[0-9A-F]{40}$`)
	digestRE      = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	gitIDRE       = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// NullID is git's null object ID: git writes it where there is no object (a ref being
// created or deleted), so no commit or tree is ever named by it. A lock that pins it pins
// nothing; a hostile API once got check-updates --write to pin it (issue 47).
const NullID = "0000000000000000000000000000000000000000"

// EmptyTree is the ID of git's tree with no entries: what a directory with no files hashes to.
const EmptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// fieldError names the field that is wrong and why.
type fieldError struct {
	Field  string
	Reason string
}

// Error quotes at most maxReason bytes of the reason: it holds the field's value, and a
// value can be as large as the lock (MaxSize).
func (e *fieldError) Error() string {
	r := e.Reason
	if len(r) > maxReason {
		r = strings.ToValidUTF8(r[:maxReason], "") + fmt.Sprintf("... (%d bytes in all)", len(e.Reason))
	}
	return e.Field + ": " + r
}

const maxReason = 300

// Validate checks every field. The first problem found is returned as a *fieldError.
func (l *Lock) Validate() error {
	if l.Schema != schemaVersion {
		return &fieldError{"schema", fmt.Sprintf("is %d, this program reads schema %d", l.Schema, schemaVersion)}
	}
	if err := checkEpoch(l.SourceDateEpoch); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, c := range l.Components {
		f := fmt.Sprintf("components[%d]", i)
		if c.Name != "" {
			f = fmt.Sprintf("components[%d] (%s)", i, c.Name)
		}
		if !slices.Contains(AllComponents(), c.Name) {
			return &fieldError{f + ".name", fmt.Sprintf("%q is not one of %s (optional: %s)", c.Name, strings.Join(ComponentOrder, ", "), strings.Join(optionalOrder, ", "))}
		}
		if seen[c.Name] {
			return &fieldError{f + ".name", "appears twice"}
		}
		seen[c.Name] = true
		if err := CheckVersion(c.Version); err != nil {
			return &fieldError{f + ".version", err.Error()}
		}
		if c.Git != nil {
			if err := checkGit(f, c); err != nil {
				return err
			}
		} else {
			if err := checkURL(c.URL); err != nil {
				return &fieldError{f + ".url", err.Error()}
			}
			if !sha256RE.MatchString(c.SHA256) {
				return &fieldError{f + ".sha256", fmt.Sprintf("%q is not 64 lower-case hex digits", c.SHA256)}
			}
		}
		if c.Unsigned != "" {
			if c.Signature != nil {
				return &fieldError{f + ".unsigned", "is set together with a signature: a component is either signed (signature) or says why it is not (unsigned); drop one"}
			}
			if strings.TrimSpace(c.Unsigned) == "" {
				return &fieldError{f + ".unsigned", unsignedEmpty}
			}
		}
		if s := c.Signature; s != nil {
			if err := checkURL(s.URL); err != nil {
				return &fieldError{f + ".signature.url", err.Error()}
			}
			if len(s.Fingerprints) == 0 {
				return &fieldError{f + ".signature.fingerprints", "is empty: name at least one signer, or drop the signature"}
			}
			for j, fp := range s.Fingerprints {
				if !fingerprintRE.MatchString(fp) {
					return &fieldError{fmt.Sprintf("%s.signature.fingerprints[%d]", f, j), fmt.Sprintf("%q is not a 40-digit upper-case hex fingerprint", fp)}
				}
			}
		}
	}
	if err := l.checkRoles(seen); err != nil {
		return err
	}
	for _, s := range specs {
		for _, lib := range s.Requires {
			if seen[s.Name] && !seen[lib] {
				return &fieldError{"components", fmt.Sprintf("component %q needs component %q (the library it is linked with): add it, or drop %q", s.Name, lib, s.Name)}
			}
		}
	}
	for _, im := range []struct {
		field string
		img   Image
	}{{"images.builder", l.Images.Builder}, {"images.runtime", l.Images.Runtime}} {
		if err := checkImage(im.field, im.img); err != nil {
			return err
		}
	}
	return l.validateProfiles()
}

// checkRoles: nginx and PCRE2, exactly one TLS library and exactly one zlib, and an nginx
// that builds with the TLS library.
func (l *Lock) checkRoles(seen map[string]bool) error {
	for _, name := range []string{Nginx, PCRE2} {
		if !seen[name] {
			return &fieldError{"components", fmt.Sprintf("component %q is missing", name)}
		}
	}
	for _, role := range []struct {
		what  string
		names []string
	}{{"TLS library", TLSLibraries}, {"zlib", ZlibLibraries}} {
		var have []string
		for _, n := range role.names {
			if seen[n] {
				have = append(have, n)
			}
		}
		switch len(have) {
		case 0:
			return &fieldError{"components", fmt.Sprintf("no %s: add one of %s (the default is %q)", role.what, strings.Join(role.names, ", "), role.names[0])}
		case 1:
		default:
			return &fieldError{"components", fmt.Sprintf("%s: a lock builds with one %s; keep one (another choice is another lock)", strings.Join(have, " and "), role.what)}
		}
	}
	if seen[AWSLC] {
		if v := l.MustComponent(Nginx).Version; compareVersions(v, MinNginxForAWSLC) < 0 {
			rc := ""
			if strings.Contains(v, "rc") {
				rc = " (a release candidate comes before its release)"
			}
			return &fieldError{"components", fmt.Sprintf("nginx %s cannot be built with AWS-LC (aws_lc): nginx supports it from %s%s; pin nginx %s or later (the shipped pipeline/lock/aws-lc.lock.json does), or use openssl", v, MinNginxForAWSLC, rc, MinNginxForAWSLC)}
		}
	}
	return nil
}

// The range a lock's source_date_epoch must be in: from 1980-01-01 (the earliest time a
// zip or FAT timestamp holds, and where tools that take SOURCE_DATE_EPOCH start clamping)
// to 2100-01-01 (a typo's extra digit, or milliseconds for seconds, lands far past it).
const (
	minEpoch = 315532800  // 1980-01-01T00:00:00Z
	maxEpoch = 4102444800 // 2100-01-01T00:00:00Z
)

// checkEpoch refuses a source_date_epoch outside minEpoch .. maxEpoch.
func checkEpoch(e int64) error {
	if e >= minEpoch && e <= maxEpoch {
		return nil
	}
	when := "before 1970"
	if e >= 0 && e <= 253402300799 { // up to the year 9999
		when = time.Unix(e, 0).UTC().Format(time.RFC3339)
	} else if e > 0 {
		when = "after the year 9999 (milliseconds instead of seconds?)"
	}
	return &fieldError{"source_date_epoch", fmt.Sprintf("%d is %s, outside 1980-01-01 .. 2100-01-01 (%d .. %d): give the Unix time in seconds of the lock's sources, e.g. the newest release's date (date -d 2024-08-14 +%%s)", e, when, minEpoch, maxEpoch)}
}

// compareVersions orders two release versions by their numeric dot-separated parts (a
// missing part counts as 0), then a release candidate before its release (1.29.2rc1 <
// 1.29.2) and candidates by number ("rc" alone is the first): -1, 0 or +1.
func compareVersions(a, b string) int {
	a, rcA, candA := strings.Cut(a, "rc")
	b, rcB, candB := strings.Cut(b, "rc")
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		if c := cmpInt(versionNumber(pa, i), versionNumber(pb, i)); c != 0 {
			return c
		}
	}
	switch {
	case candA && !candB:
		return -1
	case !candA && candB:
		return 1
	}
	return cmpInt(versionNumber([]string{rcA}, 0), versionNumber([]string{rcB}, 0))
}

func cmpInt(x, y int) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func versionNumber(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n := 0
	for _, r := range parts[i] {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// checkGit checks a git-pinned component: the repository, commit and tree, no tarball
// fields, and a reason for having no signature (git sources carry none).
func checkGit(f string, c Component) error {
	g := c.Git
	if c.URL != "" || c.SHA256 != "" {
		return &fieldError{f + ".git", "is set together with url/sha256: a component is a tarball (url, sha256) or a git commit (git); drop one"}
	}
	if err := checkURL(g.Repository); err != nil {
		return &fieldError{f + ".git.repository", err.Error()}
	}
	if !gitIDRE.MatchString(g.Commit) {
		return &fieldError{f + ".git.commit", fmt.Sprintf("%q is not a full commit ID (40 lower-case hex digits)", g.Commit)}
	}
	if g.Commit == NullID {
		return &fieldError{f + ".git.commit", "is all zeros, git's null ID, which names no commit; take the commit from `git rev-parse TAG^{commit}` in a clone of the repository"}
	}
	if !gitIDRE.MatchString(g.Tree) {
		return &fieldError{f + ".git.tree", fmt.Sprintf("%q is not a tree ID (40 lower-case hex digits; git rev-parse COMMIT^{tree})", g.Tree)}
	}
	if g.Tree == NullID {
		return &fieldError{f + ".git.tree", "is all zeros, git's null ID, which names no tree (a tree with no files is 4b825dc642cb6eb9a060e54bf8d69288fbee4904); take the tree from `git rev-parse COMMIT^{tree}` in a clone of the repository"}
	}
	if err := checkGitTag(g.Tag); err != nil {
		return &fieldError{f + ".git.tag", err.Error()}
	}
	if c.Signature != nil {
		return &fieldError{f + ".signature", "is set on a git source: a git source is verified by its commit and tree, not a detached signature; drop it"}
	}
	if c.Unsigned == "" {
		return &fieldError{f + ".unsigned", "is missing: a git source has no detached signature; say why (e.g. \"upstream publishes no release signatures\")"}
	}
	return nil
}

func checkURL(raw string) error {
	if err := checkURLText(raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the input, which may hold a password: name neither.
		return fmt.Errorf("%q is not a URL", safeio.RedactURL(raw))
	}
	// A lock is committed, reviewed and printed: credentials in it would be published with it.
	// Private mirrors take credentials at run time (--mirror), never from the lock.
	if u.User != nil {
		return fmt.Errorf("%q carries user information (user:password@): a lock holds no credentials; remove it, and give a private mirror at run time with --mirror", safeio.RedactURL(raw))
	}
	// Plain http is refused: integrity rests on the checksum, but the lock is also what
	// people read and copy, and a mirror is given at run time (--mirror), not in the lock.
	if u.Scheme != "https" {
		return fmt.Errorf("%q must be https (use --mirror URL to fetch from a plain-http mirror)", raw)
	}
	// The last path element is the name the file is cached and mirrored under, so it must be
	// a real file name: not empty (no path, or a trailing slash), "." or "..".
	if base := path.Base(u.Path); u.Host == "" || u.Path == "" || strings.HasSuffix(u.Path, "/") || base == "." || base == ".." {
		return fmt.Errorf("%q must name a file on a host", raw)
	}
	return nil
}
