package upstream

import (
	"fmt"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// bump returns c at version v: the version, the tarball URL and the signature URL with the
// old version replaced by v, and no checksum (the caller must fill it from a verified
// download). A URL that does not contain the old version cannot be derived and is an error.
func bump(c lock.Component, v string) (lock.Component, error) {
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

// containsVersion reports whether s contains v as a whole version (see substituteVersion).
func containsVersion(s, v string) bool {
	for i := 0; v != ""; {
		j := strings.Index(s[i:], v)
		if j < 0 {
			return false
		}
		if wholeVersion(s, i+j, i+j+len(v)) {
			return true
		}
		i += j + len(v)
	}
	return false
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
