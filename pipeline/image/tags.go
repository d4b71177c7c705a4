package image

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// TagEvent is what a publish is for: the git ref and commit it was built from (GitHub
// Actions' GITHUB_REF and GITHUB_SHA; both empty for a person's build outside a checkout's
// CI), and, for a person's build, whether to move the moving tags too.
type TagEvent struct {
	Ref      string // "refs/heads/main", "refs/tags/v1.4.0", "" (none)
	Revision string // the commit, 40 hex digits ("" when unknown)
	Latest   bool   // a person's --latest: move the channel and latest as main would
}

// MainRef is the branch whose builds are the released image: update pull requests merge
// into it, so the moving tags follow it.
const MainRef = "refs/heads/main"

var releaseRefRE = regexp.MustCompile(`^refs/tags/(v[0-9]+\.[0-9]+\.[0-9]+)$`)

// Tags decides the tags a publish of l moves, in this order (the README's tag table says
// the same; `ci build --push` and `ci manifest` both call this):
//
//   - <nginx> (1.26.2), <nginx>-openssl<v>-pcre2-<v>-zlib<v> (this exact stack) and
//     <major.minor> (1.26): every publish;
//   - stable or mainline (nginx's even or odd minor, as nginx and the official image name
//     them): from main, a release tag, or with Latest;
//   - sha-<12 hex>: the commit's build, whenever the revision is known (never re-pointed by
//     another commit);
//   - latest: from main, a release tag, or with Latest;
//   - v<X.Y.Z>: a push of this repository's release tag vX.Y.Z.
//
// Any other ref (a pull request, another branch) moves only the sha- tag, or nothing.
func Tags(l *lock.Lock, ev TagEvent) []string {
	v := func(n string) string {
		c, _ := l.Component(n)
		return c.Version
	}
	release := releaseRefRE.FindStringSubmatch(ev.Ref)
	moving := ev.Ref == MainRef || release != nil || (ev.Ref == "" && ev.Latest)
	var tags []string
	if ev.Ref == "" || moving {
		nginx := v(lock.Nginx)
		tags = append(tags, nginx,
			fmt.Sprintf("%s-openssl%s-pcre2-%s-zlib%s", nginx, v(lock.OpenSSL), v(lock.PCRE2), v(lock.Zlib)))
		if minor := nginxMinor(nginx); minor != "" {
			tags = append(tags, minor)
			if moving {
				tags = append(tags, nginxChannel(nginx))
			}
		}
	}
	if len(ev.Revision) >= 12 {
		tags = append(tags, "sha-"+strings.ToLower(ev.Revision[:12]))
	}
	if moving {
		tags = append(tags, "latest")
	}
	if release != nil {
		tags = append(tags, release[1])
	}
	return tags
}

// nginxMinor is "1.26" for "1.26.2".
func nginxMinor(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "." + parts[1]
}

// nginxChannel is nginx's name for a branch: an even minor is stable, an odd one mainline.
func nginxChannel(v string) string {
	parts := strings.Split(v, ".")
	if n, err := strconv.Atoi(parts[1]); err == nil && n%2 == 1 {
		return "mainline"
	}
	return "stable"
}
