package upstreamtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// The answers of GitHub's git database API, in the shape of the responses recorded under
// pipeline/upstream/testdata/github/git (GET /repos/O/R/git/ref/tags/T, /git/tags/SHA,
// /git/commits/SHA), for objects a test makes.

func nodeID(prefix, s string) string {
	sum := sha256.Sum256([]byte(s))
	return prefix + hex.EncodeToString(sum[:8])
}

func render(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// GitRefJSON is GET /repos/<repo>/git/ref/tags/<tag>: the tag pointing at the object sha of
// type typ ("commit" for a lightweight tag, "tag" for an annotated one).
func GitRefJSON(repo, tag, typ, sha string) []byte {
	api := "https://api.github.com/repos/" + repo
	kind := "commits"
	if typ != "commit" {
		kind = typ + "s"
	}
	return render(map[string]any{
		"ref":     "refs/tags/" + tag,
		"node_id": nodeID("REF_kwDO", repo+tag),
		"url":     api + "/git/refs/tags/" + tag,
		"object":  map[string]any{"sha": sha, "type": typ, "url": fmt.Sprintf("%s/git/%s/%s", api, kind, sha)},
	})
}

var unsignedVerification = map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}

// gitTagJSON is GET /repos/<repo>/git/tags/<sha>: the annotated tag object sha, named tag,
// pointing at commit.
func gitTagJSON(repo, sha, tag, commit string) []byte {
	api := "https://api.github.com/repos/" + repo
	return render(map[string]any{
		"node_id":      nodeID("TAG_kwDO", sha),
		"sha":          sha,
		"url":          api + "/git/tags/" + sha,
		"tagger":       map[string]any{"name": "Release Manager", "email": "release@example.test", "date": "2026-11-30T10:00:00Z"},
		"object":       map[string]any{"sha": commit, "type": "commit", "url": api + "/git/commits/" + commit},
		"tag":          tag,
		"message":      tag + " tag\n",
		"verification": unsignedVerification,
	})
}

// GitCommitJSON is GET /repos/<repo>/git/commits/<sha>: the commit sha with tree tree.
func GitCommitJSON(repo, sha, tree, message string) []byte {
	api := "https://api.github.com/repos/" + repo
	person := map[string]any{"name": "Release Manager", "email": "release@example.test", "date": "2026-11-30T09:00:00Z"}
	return render(map[string]any{
		"sha":          sha,
		"node_id":      nodeID("C_kwDO", sha),
		"url":          api + "/git/commits/" + sha,
		"html_url":     "https://github.com/" + repo + "/commit/" + sha,
		"author":       person,
		"committer":    person,
		"tree":         map[string]any{"sha": tree, "url": api + "/git/trees/" + tree},
		"message":      strings.TrimSuffix(message, "\n") + "\n",
		"parents":      []any{},
		"verification": unsignedVerification,
	})
}
