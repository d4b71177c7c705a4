package image

import (
	"fmt"
	"regexp"
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
