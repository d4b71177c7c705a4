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

// mainRef is the branch whose builds are the released image: update pull requests merge
// into it, so the moving tags follow it.
const mainRef = "refs/heads/main"

// releaseRefRE is a push of a release tag vX.Y.Z: numbers without leading zeros
// (refs/tags/v01.2.3 is not a version; CheckRef refuses it).
var releaseRefRE = regexp.MustCompile(`^refs/tags/(v(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*))$`)

// looseReleaseRefRE is what a person means as a release tag, leading zeros and all.
var looseReleaseRefRE = regexp.MustCompile(`^refs/tags/v[0-9]+\.[0-9]+\.[0-9]+$`)

// tagRE is the OCI distribution spec's tag grammar: 1 to 128 characters, the first a
// letter, digit or underscore.
var tagRE = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// tagRule is the tag grammar in words, for messages.
const tagRule = "a tag is 1 to 128 letters, digits, '_', '.' or '-', and does not start with '.' or '-'"

// CheckTag is nil when t is a tag a registry accepts (the OCI tag grammar,
// [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}); its error quotes at most 80 characters of t.
func CheckTag(t string) error {
	if tagRE.MatchString(t) {
		return nil
	}
	what := "is not a valid tag"
	if len(t) > 128 {
		what = fmt.Sprintf("is %d characters long, more than a tag may have (128)", len(t))
	}
	return fmt.Errorf("%s %s: %s", quoteShort(t), what, tagRule)
}

// CheckRef is nil when ref is empty or a git ref the tags can be decided from: no control
// character or white space (git allows neither in a ref name), and a release tag's version
// without leading zeros (refs/tags/v01.2.3 is not release 1.2.3).
func CheckRef(ref string) error {
	for i, r := range ref {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("%s has the control or white-space character %U at byte %d: a git ref has none (give it as GITHUB_REF has it, e.g. refs/heads/main)", quoteShort(ref), r, i)
		}
	}
	if looseReleaseRefRE.MatchString(ref) && !releaseRefRE.MatchString(ref) {
		return fmt.Errorf("%s is not a release version: a release tag is vX.Y.Z with no leading zeros (v1.2.3, not v01.2.3); rename the tag", quoteShort(ref))
	}
	return nil
}

// quoteShort quotes s, cut to 80 bytes.
func quoteShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q... (%d bytes)", s[:80], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// Tags decides the tags a publish of l moves, in this order (docs/tags.md's table says
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
//
// There is no major-version tag ("1"): nginx's second number is its release branch, and a
// new stable branch (1.26 to 1.28) may drop directives a configuration uses, so "1" would
// move a consumer across what is a major release in all but name (docs/tags.md).
//
// A lock that builds with another TLS library or zlib than the default (OpenSSL, zlib) is
// a variant: every tag above gets the variant's suffix (variantSuffix: "-aws-lc-zlib-ng"),
// and the exact stack tag names its libraries (1.30.4-aws-lc5.5.0-pcre2-10.46-zlib-ng2.2.2),
// so the default image and a variant published from the same commit never share a tag.
func Tags(l *lock.Lock, ev TagEvent) []string {
	tags := defaultTags(l, ev)
	suffix := variantSuffix(l)
	if suffix == "" {
		return tags
	}
	stack := stackTag(l)
	for i, t := range tags {
		if t != stack {
			tags[i] = t + suffix
		}
	}
	return tags
}

// variantSuffix is "" for a lock with the default libraries, else "-" and each non-default
// library's name as a person types it (--tls aws-lc, --zlib zlib-ng): "-aws-lc-zlib-ng".
func variantSuffix(l *lock.Lock) string {
	var s string
	if t := l.TLS().Name; t != lock.TLSLibraries[0] {
		s += "-" + lock.FlagName(t)
	}
	if z := l.ZlibLibrary().Name; z != lock.ZlibLibraries[0] {
		s += "-" + lock.FlagName(z)
	}
	return s
}

// stackTag names the exact stack: nginx, the TLS library, PCRE2 and the zlib with versions.
// The default libraries keep their historic spelling (openssl3.3.1, zlib1.3.1).
func stackTag(l *lock.Lock) string {
	tls, z := l.TLS(), l.ZlibLibrary()
	return fmt.Sprintf("%s-%s%s-pcre2-%s-%s%s", l.MustComponent(lock.Nginx).Version, lock.FlagName(tls.Name), tls.Version,
		l.MustComponent(lock.PCRE2).Version, lock.FlagName(z.Name), z.Version)
}

func defaultTags(l *lock.Lock, ev TagEvent) []string {
	v := func(n string) string {
		c, _ := l.Component(n)
		return c.Version
	}
	release := releaseRefRE.FindStringSubmatch(ev.Ref)
	moving := ev.Ref == mainRef || release != nil || (ev.Ref == "" && ev.Latest)
	var tags []string
	if ev.Ref == "" || moving {
		nginx := v(lock.Nginx)
		tags = append(tags, nginx, stackTag(l))
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
