package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// resolvedTag is a release tag resolved through GitHub's git database API: the commit the tag
// points at (through any annotated tag objects) and that commit's tree. A component pinned by
// git commit moves to these; the update then fetches the commit and checks its tree before
// anything is written (see updater).
type resolvedTag struct {
	Tag    string
	Commit string
	Tree   string
}

// ghGitObject is the "object" member of a ref or an annotated tag.
type ghGitObject struct {
	SHA  string `json:"sha"`
	Type string `json:"type"` // "commit", "tag" (an annotated tag), "tree" or "blob"
}

// ghRef is GET /repos/O/R/git/ref/tags/T.
type ghRef struct {
	Ref    string      `json:"ref"`
	Object ghGitObject `json:"object"`
}

// ghTagObject is GET /repos/O/R/git/tags/SHA (an annotated tag).
type ghTagObject struct {
	SHA    string      `json:"sha"`
	Tag    string      `json:"tag"`
	Object ghGitObject `json:"object"`
}

// ghCommit is GET /repos/O/R/git/commits/SHA.
type ghCommit struct {
	SHA  string `json:"sha"`
	Tree struct {
		SHA string `json:"sha"`
	} `json:"tree"`
}

var gitIDRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// isGitID reports whether s can name a git object: 40 lower-case hex digits, and not git's
// null ID (lock.NullID), which an API answer once got pinned as a commit's tree (issue 47).
func isGitID(s string) bool { return gitIDRE.MatchString(s) && s != lock.NullID }

// maxTagChain bounds annotated tags pointing at annotated tags: git allows a chain, release
// tags are one level, and a longer chain is a misbehaving server.
const maxTagChain = 4

// ResolveTag resolves component's release tag to its commit and that commit's tree, with
// GitHub's git database API: /repos/O/R/git/ref/tags/TAG, then for an annotated tag
// /git/tags/SHA (as many levels as it has, up to maxTagChain), then /git/commits/SHA for the
// tree. Each answer must be about the object asked for.
func (c *client) ResolveTag(ctx context.Context, component, tag string) (resolvedTag, error) {
	repo := upstreamOf(component)
	if repo.GitHub == "" {
		return resolvedTag{}, fmt.Errorf("component %q has no known upstream repository", component)
	}
	base := "/repos/" + repo.GitHub + "/git/"
	fail := func(err error) (resolvedTag, error) {
		return resolvedTag{}, fmt.Errorf("resolving tag %s of %s: %w", tag, repo.GitHub, err)
	}
	var ref ghRef
	if err := c.ghObject(ctx, base+"ref/tags/"+escapeSegments(tag), &ref); err != nil {
		return fail(err)
	}
	if ref.Ref != "refs/tags/"+tag {
		return fail(fmt.Errorf("GitHub answered with the ref %q", ref.Ref))
	}
	obj := ref.Object
	for level := 0; obj.Type == "tag"; level++ {
		if level == maxTagChain {
			return fail(fmt.Errorf("more than %d annotated tags in a chain", maxTagChain))
		}
		var tg ghTagObject
		if err := c.gitObject(ctx, base+"tags/", "tag object", obj.SHA, &tg, func() string { return tg.SHA }); err != nil {
			return fail(err)
		}
		obj = tg.Object
	}
	if obj.Type != "commit" {
		return fail(fmt.Errorf("the tag points at a %q, not a commit", obj.Type))
	}
	var cm ghCommit
	if err := c.gitObject(ctx, base+"commits/", "commit", obj.SHA, &cm, func() string { return cm.SHA }); err != nil {
		return fail(err)
	}
	if !isGitID(cm.Tree.SHA) {
		return fail(fmt.Errorf("commit %s: tree ID %q is not 40 lower-case hex digits, or is git's null ID (names no tree)", obj.SHA, cm.Tree.SHA))
	}
	return resolvedTag{Tag: tag, Commit: obj.SHA, Tree: cm.Tree.SHA}, nil
}

// gitObject GETs the git object of kind ("tag object", "commit") whose ID is sha, from
// dir+sha, into into, and checks that the answer is about it (answered is the ID into holds).
func (c *client) gitObject(ctx context.Context, dir, kind, sha string, into any, answered func() string) error {
	if !isGitID(sha) {
		return fmt.Errorf("%s ID %q is not 40 lower-case hex digits, or is git's null ID (names no object)", kind, sha)
	}
	if err := c.ghObject(ctx, dir+sha, into); err != nil {
		return err
	}
	if got := answered(); got != sha {
		return fmt.Errorf("asked for %s %s, GitHub answered with %q", kind, sha, got)
	}
	return nil
}

// ghObject GETs one API object (not a list) into into.
func (c *client) ghObject(ctx context.Context, path string, into any) error {
	u, err := url.Parse(strings.TrimSuffix(c.githubAPI, "/") + path)
	if err != nil {
		return fmt.Errorf("GitHub API URL %q: %w", c.githubAPI, err)
	}
	resp, body, err := c.ghGet(ctx, u, maxAPIBody)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return ghError("reading "+path, resp, []byte(safeio.Redact(string(body), c.token)), c.token != "")
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("reading %s: the response is not the expected JSON object: %w", path, err)
	}
	return nil
}

// escapeSegments path-escapes each "/"-separated part of a tag name (a tag may contain "/",
// which GitHub's ref endpoint takes as it is).
func escapeSegments(s string) string {
	parts := strings.Split(s, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
