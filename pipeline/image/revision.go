package image

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

var revisionRE = regexp.MustCompile(`^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)

// CheckRevision is nil when rev is empty or a full git commit name (40 hex digits, or 64 in
// a SHA-256 repository), as GITHUB_SHA and `git rev-parse HEAD` give it. Anything else
// would be recorded in the image and dropped from the tags (the sha- tag needs 12 hex
// digits of a real commit), so the commands refuse it as a usage error instead.
func CheckRevision(rev string) error {
	if rev == "" || revisionRE.MatchString(rev) {
		return nil
	}
	q := rev
	if len(q) > 80 {
		q = q[:80] + "..."
	}
	return fmt.Errorf("%q is not a full commit name: give all 40 hex digits (git rev-parse HEAD, or GITHUB_SHA)", q)
}

// CheckSource is nil when repo is empty or what WithSource may write: an https URL of a
// repository (a host and a path), with no user name or password, query or fragment. ci
// reads the repository from where the build runs and normalises it; this is the rule it
// must meet, so no caller writes a credential or a local path into a label. Its messages do
// not repeat repo, which may hold the credential refused.
func CheckSource(repo string) error {
	if repo == "" {
		return nil
	}
	u, err := url.Parse(repo)
	switch {
	case err != nil || strings.ContainsFunc(repo, unicode.IsSpace) || strings.ContainsFunc(repo, unicode.IsControl):
		return fmt.Errorf("the source repository is not a URL")
	case u.User != nil:
		return fmt.Errorf("the source repository URL carries credentials (user@ or user:password@): give it without them")
	case u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("the source repository is not an https URL (e.g. https://github.com/OWNER/REPO)")
	case strings.Trim(u.Path, "/") == "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(repo, "?") || strings.HasSuffix(repo, "#"):
		return fmt.Errorf("the source repository URL does not name a repository: give https://HOST/PATH, without a query or fragment")
	}
	return nil
}
