package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/redirects"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// Refusal is an update that was not made: the component or image, the release or digest
// that was refused, why, and what a person does to resolve it. The other updates of the same
// run are made regardless (each component and image is decided on its own).
type Refusal struct {
	Name   string // component name, or "builder image" / "runtime image"
	Target string // the refused version or digest ("" when the lookup itself failed)
	Err    error  // why
	Fix    string // the command or step that resolves it
}

func (r Refusal) Error() string {
	t := r.Name
	if r.Target != "" {
		t += " " + r.Target
	}
	return t + ": " + r.Err.Error()
}

func (r Refusal) Unwrap() error { return r.Err }

// fixFor says what resolves a refusal, from what refused it.
func fixFor(name string, err error) string {
	var se *source.SignerError
	var ke *source.KeyError
	var ee *source.ExpiredSignerError
	switch {
	case errors.As(err, &ee) && ee.Vendored:
		return fmt.Sprintf("the key %s signed after its vendored copy's expiry, and no copy from the key servers extends it: ask upstream whether it extended or replaced the key; "+
			"check its current copy out of band and replace %s/%s.asc with it in a reviewed change (or run again with --keyserver URL naming a key server that has it)", ee.Fingerprint, lock.KeysDir, ee.Fingerprint)
	case errors.As(err, &ee):
		return "ask upstream for a signature by a valid key; keep the lock as it is (the next run checks again)"
	case errors.As(err, &se):
		fpr := se.Issuer
		if fpr == "" {
			fpr = "<FINGERPRINT of key " + se.KeyID + ">"
		}
		return fmt.Sprintf("if upstream really changed signers, check the new key with them out of band, then adopt it in a reviewed change: go run ./ci lock trust %s %s", name, fpr)
	case errors.As(err, &ke):
		return fmt.Sprintf("the pinned key %s could not be obtained: run again with --keyserver URL naming a key server that has it, or vendor it by hand as %s/%s.asc in a reviewed change", ke.Fingerprint, lock.KeysDir, ke.Fingerprint)
	case errors.Is(err, errArchivePolicy):
		return "keep the lock as it is: if --mirror served the file, fix the mirror (its archive must be upstream's, one stream, nothing appended); otherwise ask upstream. The next run checks again"
	case errors.Is(err, errReplay), errors.Is(err, errWrongTopDir):
		return "ask upstream; keep the lock as it is (the next run checks again)"
	case errors.Is(err, errUnsignedReason):
		return "rewrite the component's \"unsigned\" reason in the lock so that it holds for any release (why upstream publishes no signatures, without a version), then run go run ./ci check-updates --write again"
	case errors.Is(err, errTreeMismatch):
		return "keep the lock as it is: a tag whose commit's files are not the tree GitHub reports is a matter for upstream (check with `git fetch REPO TAG` and `git rev-parse FETCH_HEAD^{tree}` in a clone); if --mirror served the files, fix the mirror. The next run checks again"
	case errors.Is(err, errRepository):
		return "move the component by hand in a reviewed change (tag, commit and `git rev-parse COMMIT^{tree}` from the pinned repository), or pin upstream's repository"
	case errors.Is(err, errLockConstraints):
		return fmt.Sprintf("keep the lock as it is, or set %s's track so that it picks a release this lock allows (an AWS-LC lock needs nginx %s or later, e.g. track \"stable\")", name, lock.MinNginxForAWSLC)
	case errors.Is(err, errPlatforms):
		return "wait for the image to be published for every platform the build targets (the next run checks again), or pin a digest by hand"
	case errors.As(err, new(*unpack.DeadlineError)):
		// The deadline ended the unpacking: nothing was judged, and running again with the
		// same deadline on the same machine ends the same way (issue 47 called it transient).
		return "the run's deadline (--timeout) ended it before the release was judged, not a refusal of the release: give a longer --timeout (or run on a faster machine), then run go run ./ci check-updates again"
	case errors.Is(err, errTrack):
		return fmt.Sprintf("not transient: set %s's \"track\" in the lock to one that picks an upstream release (see go run ./ci check-updates -h), then run again", name)
	}
	return retryFix(err)
}

// retryFix says whether running again can help, by the one rule of netfail.Transient: only a
// timeout, a connection refused or cut off, or a server's own failure clears by itself.
// (A refusal whose every cause is an unreachable server is said once per server instead:
// Run.GroupUnreachable.)
func retryFix(err error) string {
	const again = "go run ./ci check-updates"
	f := netfail.Classify(err)
	if netfail.Transient(err) {
		what := "a timeout, a connection refused or cut off, or a server error"
		if f.Kind != netfail.None && len(netfail.Causes(err)) == 1 {
			what = f.Describe()
		}
		return "transient (" + what + "): run " + again + " again (the next scheduled run does), or give a longer --timeout"
	}
	if f.Kind == netfail.DNS || f.Kind == netfail.TLS {
		return "not transient: " + f.String() + ": check this machine's network, DNS and trusted certificates, or the host named in --github-api, --nginx-org or --mirror, then run " + again + " again"
	}
	var se *netfail.HTTPStatusError
	if errors.As(err, &se) {
		switch se.Code {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("not transient: the server refused the credentials (HTTP %d): fix or unset the token (GITHUB_TOKEN, or the variable --github-token-env names) or the mirror's user:password, then run %s again", se.Code, again)
		case http.StatusNotFound, http.StatusGone:
			return fmt.Sprintf("not transient: the server has no such resource (HTTP %d): check --github-api, --mirror and the component's repository, then run %s again", se.Code, again)
		}
	}
	if errors.As(err, new(*redirects.LoopError)) {
		return "not transient: the server's redirects go in a circle (or on past 10), and every run follows the same ones: fix the redirects of the server named (--github-api, --nginx-org, --mirror), or give a URL that answers directly, then run " + again + " again"
	}
	if errors.Is(err, errNotAList) {
		return "not transient: the answer is not GitHub's release or tag list (is --github-api GitHub's REST API root, or a proxy that answers with something else?): fix --github-api, then run " + again + " again"
	}
	if errors.Is(err, errRateLimited) {
		return "not transient until the rate limit resets: give a GitHub token (GITHUB_TOKEN or --github-token-env), or run again after the reset time above"
	}
	return "not transient: running again gives the same answer until what the error names is fixed; fix it, then run " + again + " again"
}

// refusedError is UpdateFile's error when something was refused: every refusal, and whether
// the other updates were written.
type refusedError struct {
	Refused []Refusal
	Wrote   bool // the lock (and any vendored key) was written with the updates that passed
}

func (e *refusedError) Error() string {
	var b strings.Builder
	for i, r := range e.Refused {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.Error())
	}
	if e.Wrote {
		b.WriteString(" (the other updates were written)")
	} else {
		b.WriteString(" (the lock is unchanged)")
	}
	return b.String()
}

// Unwrap gives errors.Is and errors.As each refusal's cause.
func (e *refusedError) Unwrap() []error {
	out := make([]error, len(e.Refused))
	for i, r := range e.Refused {
		out[i] = r.Err
	}
	return out
}
