package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

var (
	errTreeMismatch    = errors.New("tree mismatch")
	errRepository      = errors.New("repository is not upstream's")
	errLockConstraints = errors.New("the updated lock would be invalid")
)

// gitRelease resolves the tag of c's release v (a component pinned by git commit) to its
// commit and tree. tags are the tags GitHub lists for v; with none (nginx.org's list), the
// tag is the locked one's name with the version replaced.
func (ch *checker) gitRelease(ctx context.Context, c lock.Component, v string, tags []string) (resolvedTag, error) {
	if err := upstreamRepository(c); err != nil {
		return resolvedTag{}, err
	}
	tag, err := pickTag(c, v, tags)
	if err != nil {
		return resolvedTag{}, err
	}
	return ch.Releases.ResolveTag(ctx, c.Name, tag)
}

// upstreamRepository checks that c's repository is the one its releases are looked up in
// (lock.Specs): a commit found there is then a commit of the repository the build fetches from.
func upstreamRepository(c lock.Component) error {
	want := "https://github.com/" + upstreamOf(c.Name).GitHub
	got := strings.TrimSuffix(strings.TrimSuffix(c.Git.Repository, "/"), ".git")
	if !strings.EqualFold(got, want) {
		return fmt.Errorf("the lock pins %s's commits from %s, but its releases are looked up in %s: an update cannot vouch for a commit of another repository; move it by hand (%w)",
			c.Name, safeio.RedactURL(c.Git.Repository), want, errRepository)
	}
	return nil
}

// pickTag is the tag of release v: the one GitHub lists that is named like the locked tag
// (the locked tag with the version replaced), else the only one, else the first by name.
func pickTag(c lock.Component, v string, tags []string) (string, error) {
	like := ""
	if c.Git.Tag != "" {
		like, _ = substituteVersion(c.Git.Tag, c.Version, v)
	}
	switch {
	case like != "" && (slices.Contains(tags, like) || len(tags) == 0):
		if got, ok := versionFromTag(c.Name, like); !ok || got.String() != v {
			return "", fmt.Errorf("the tag %q (named like the locked %q) does not name release %s", like, c.Git.Tag, v)
		}
		return like, nil
	case len(tags) == 0:
		return "", fmt.Errorf("no tag is known for release %s (the release list came from nginx.org, and the lock names no tag to follow)", v)
	}
	sorted := append([]string(nil), tags...)
	sort.Strings(sorted)
	return sorted[0], nil
}

// gitComponent vets the new commit of a component pinned by git commit, as resolved by the
// check (cr's Tag, Commit and Tree), and returns the lock entry for it. The commit is fetched
// with the source fetcher, which checks that what it received hashes to the tree (from the
// repository: git's own object checks make the fetched commit its ID's content, and its tree
// is compared; from a mirror: the archive's files are hashed as a git tree). A different tree
// is refused, naming both. Nothing is signed: the lock's "unsigned" reason is kept, with the
// locked tag and version in it replaced by the new ones (it describes the pin, which moves).
func (u *updater) gitComponent(ctx context.Context, old lock.Component, cr ComponentReport) (lock.Component, Applied, error) {
	if !isGitID(cr.Commit) || !isGitID(cr.Tree) {
		return lock.Component{}, Applied{}, fmt.Errorf("the check resolved no commit and tree for %s's release %s (tag %q, commit %q, tree %q); run the check again", old.Name, cr.Latest, cr.Tag, cr.Commit, cr.Tree)
	}
	if err := upstreamRepository(old); err != nil {
		return lock.Component{}, Applied{}, err
	}
	next := old
	next.Version = cr.Latest
	next.Git = &lock.Git{Repository: old.Git.Repository, Tag: cr.Tag, Commit: cr.Commit, Tree: cr.Tree}
	next.Unsigned = rewriteReason(old, cr)
	a := Applied{Name: old.Name, Old: old.Version, New: cr.Latest, Git: next.Git, OldGit: old.Git, Unsigned: next.Unsigned}
	if next.Unsigned != old.Unsigned {
		a.UnsignedWas = old.Unsigned
	}
	v, err := u.Fetcher.Fetch(ctx, next)
	var te *source.TreeError
	var ue *unpack.Error
	switch {
	case errors.As(err, &ue):
		return lock.Component{}, Applied{}, fmt.Errorf("refused: commit %s of tag %s: %w (%w)", cr.Commit, cr.Tag, err, errArchivePolicy)
	case errors.As(err, &te):
		// Not wrapped: the fetcher's words are about a lock that pins the tree, and this one
		// was never written.
		return lock.Component{}, Applied{}, fmt.Errorf("refused: GitHub says tag %s is commit %s with tree %s, but the files of commit %s from %s hash to tree %s: "+
			"the commit or its files are not what the tag names; nothing was cached (%w)", cr.Tag, cr.Commit, cr.Tree, cr.Commit, te.From, te.Got, errTreeMismatch)
	case err != nil:
		return lock.Component{}, Applied{}, fmt.Errorf("refused: commit %s of tag %s could not be fetched and checked: %w", cr.Commit, cr.Tag, err)
	case v.Tree != cr.Tree || v.Commit != cr.Commit:
		return lock.Component{}, Applied{}, fmt.Errorf("refused: the fetcher verified commit %q with tree %q, not commit %s with tree %s (%w)", v.Commit, v.Tree, cr.Commit, cr.Tree, errTreeMismatch)
	}
	a.FetchedFrom = v.URL
	u.sink().Send(progress.Detailf("%s %s: tag %s, commit %s, tree %s verified (%s)", old.Name, cr.Latest, cr.Tag, cr.Commit, cr.Tree, orCache(v.URL)))
	return next, a, nil
}

// rewriteReason is old's "unsigned" reason for the new pin: the locked tag and the locked
// version, wherever they appear whole, replaced by the new ones.
func rewriteReason(old lock.Component, cr ComponentReport) string {
	r := old.Unsigned
	if old.Git.Tag != "" && cr.Tag != "" {
		if s, err := substituteVersion(r, old.Git.Tag, cr.Tag); err == nil {
			r = s
		}
	}
	if s, err := substituteVersion(r, old.Version, cr.Latest); err == nil {
		r = s
	}
	return r
}

// allowed refuses, before anything is fetched, a release that would make the lock invalid
// with the rest of it as it is (nginx older than an AWS-LC lock needs): l is the lock so far.
func allowed(l *lock.Lock, name, v string) error {
	trial := *l
	trial.Components = append([]lock.Component(nil), l.Components...)
	c := trial.MustComponent(name)
	c.Version = v
	trial.SetComponent(c)
	if err := trial.Validate(); err != nil {
		return fmt.Errorf("refused: with %s %s the lock is invalid: %w (%w)", name, v, err, errLockConstraints)
	}
	return nil
}

func orCache(from string) string {
	if from == "" {
		return "from the source cache"
	}
	return "from " + safeio.RedactURL(from)
}
