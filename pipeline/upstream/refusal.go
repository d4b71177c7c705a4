package upstream

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
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
	}
	return "run go run ./ci check-updates again (a transient failure clears by itself on the next scheduled run; a file that keeps failing its checks is a matter for upstream)"
}

// RefusedError is UpdateFile's error when something was refused: every refusal, and whether
// the other updates were written.
type RefusedError struct {
	Refused []Refusal
	Wrote   bool // the lock (and any vendored key) was written with the updates that passed
}

func (e *RefusedError) Error() string {
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
func (e *RefusedError) Unwrap() []error {
	out := make([]error, len(e.Refused))
	for i, r := range e.Refused {
		out[i] = r.Err
	}
	return out
}
