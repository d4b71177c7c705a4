package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// The one set of rules every reader of a lock goes through (Parse, and so Load and every
// command): one input, one verdict.

// versionPart is a release number without leading zeros, at most 9 digits, so it fits an
// int32 wherever versions are compared (pipeline/upstream.ParseVersion uses CheckVersion).
const versionPart = `(?:0|[1-9][0-9]{0,8})`

// A release version like 1.26.2; "rc" with an optional number from 1 may follow, because
// ngx_brotli's only release is v1.0.0rc.
var strictVersionRE = regexp.MustCompile(`^` + versionPart + `(?:\.` + versionPart + `){1,3}(?:rc(?:[1-9][0-9]{0,8})?)?$`)

// CheckVersion is nil when v is a release version as the lock holds it: 2 to 4 dot-separated
// numbers without leading zeros (1.26.2, not 01.26.2), optionally followed by rc or rcN.
func CheckVersion(v string) error {
	if !strictVersionRE.MatchString(v) {
		return fmt.Errorf("%q is not a release version like 1.26.2 (2 to 4 numbers of at most 9 digits, no leading zeros; rc or rcN may follow)", v)
	}
	return nil
}

// checkText refuses what no URL or image reference in a lock may hold: white space, control
// characters and anything outside printable ASCII (which covers the Unicode bidirectional
// controls, such as U+202E, that make a value read differently from what it is).
func checkText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for i, r := range s {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			return fmt.Errorf("has white space at byte %d", i)
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("has the control character %U at byte %d", r, i)
		case r > 0x7e:
			return fmt.Errorf("has the non-ASCII character %U at byte %d (percent-encode it; bidirectional and invisible characters are refused)", r, i)
		}
	}
	return nil
}

// checkGitTag is nil for an empty tag (the field is optional) or a tag name git would take
// (git check-ref-format) that the lock can print and pass on as it is: the rules of checkText
// (no white space, control, bidirectional or other non-ASCII character), no ".." (nor any
// other part starting with "."), none of ~ ^ : ? * [ \ or "@{", no quote, backquote or $, and
// neither a leading "-" or "/" nor a trailing "/", "." or ".lock".
func checkGitTag(tag string) error {
	if tag == "" {
		return nil
	}
	q := fmt.Sprintf("%q", tag)
	if len(tag) > 200 {
		return fmt.Errorf("%q... is %d bytes long: a tag name is short (like v5.5.0)", tag[:80], len(tag))
	}
	if err := checkText(tag); err != nil {
		return fmt.Errorf("%s %w", q, err)
	}
	switch {
	case strings.Contains(tag, ".."):
		return fmt.Errorf("%s has \"..\": git refuses it in a tag name", q)
	case strings.ContainsAny(tag, "~^:?*[\\\"'`$") || strings.Contains(tag, "@{"):
		return fmt.Errorf("%s has a character git or a shell gives a meaning (~ ^ : ? * [ \\ @{ quotes $): give the tag as upstream names it, like v5.5.0", q)
	case strings.HasPrefix(tag, "-"), strings.HasPrefix(tag, "/"), strings.HasSuffix(tag, "/"), strings.HasSuffix(tag, "."),
		strings.HasSuffix(tag, ".lock"), strings.Contains(tag, "//"), strings.Contains(tag, "/."), strings.HasPrefix(tag, "."):
		return fmt.Errorf("%s is not a tag name git takes (no leading -, / or ., no trailing /, . or .lock, no empty or dot-led part)", q)
	}
	return nil
}

// checkURLText is checkURL's first step: the raw text, then the decoded path and query,
// where %00 or %0A would become a control character in a file name or a Dockerfile line.
func checkURLText(raw string) error {
	if err := checkText(raw); err != nil {
		return fmt.Errorf("%q %w", safeio.RedactURL(raw), err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil // checkURL says it is not a URL
	}
	q, _ := url.QueryUnescape(u.RawQuery)
	for _, dec := range []string{u.Path, q, u.Fragment} {
		for _, r := range dec {
			if r < 0x20 || r == 0x7f || r == ' ' {
				return fmt.Errorf("%q has a percent-encoded control character or space (%U): a file name cannot hold it", safeio.RedactURL(raw), r)
			}
		}
	}
	if strings.ContainsAny(raw, `"'\`+"`$") {
		return fmt.Errorf("%q has a quote, backslash or $: a lock URL must be plain (percent-encode it)", safeio.RedactURL(raw))
	}
	return nil
}

// checkImage checks one base image: a reference that parses, with no credentials and no
// white space, and a digest (in the digest field or after @ in the ref) of sha256:<64 hex>;
// both given, they must agree.
func checkImage(field string, im Image) error {
	if im.Ref == "" {
		return &fieldError{field + ".ref", "is empty"}
	}
	if err := checkText(im.Ref); err != nil {
		return &fieldError{field + ".ref", fmt.Sprintf("%q %v", im.Ref, err)}
	}
	if strings.Contains(im.Ref, "://") {
		return &fieldError{field + ".ref", fmt.Sprintf("%q is a URL: give an image reference like docker.io/library/ubuntu:24.04", im.Ref)}
	}
	if at := strings.Index(im.Ref, "@"); at >= 0 {
		d := im.Ref[at+1:]
		if !digestRE.MatchString(d) {
			return &fieldError{field + ".ref", fmt.Sprintf("%q has an @ that is not followed by a sha256:<64 hex digits> digest (credentials, user:password@, never belong in a lock; registries take them from the keychain)", redactRef(im.Ref))}
		}
		if im.Digest != "" && im.Digest != d {
			return &fieldError{field + ".digest", fmt.Sprintf("%q differs from the digest in the ref (%s): keep one", im.Digest, d)}
		}
	}
	if _, err := name.ParseReference(im.Ref); err != nil {
		return &fieldError{field + ".ref", fmt.Sprintf("%q is not an image reference like docker.io/library/ubuntu:24.04", im.Ref)}
	}
	if im.Digest != "" && !digestRE.MatchString(im.Digest) {
		return &fieldError{field + ".digest", fmt.Sprintf("%q is not sha256:<64 hex digits>", im.Digest)}
	}
	if d := cmpDigest(im); d == zeroDigest {
		f := field + ".digest"
		if im.Digest == "" {
			f = field + ".ref"
		}
		return &fieldError{f, "is all zeros, which names no image: take the digest the registry gives for the tag (crane digest " + tagOf(im.Ref) + ", or let check-updates --write pin it)"}
	}
	return checkSnapshot(field, im)
}

// zeroDigest is the sha256 digest of all zeros: a placeholder, never the digest of a manifest.
var zeroDigest = "sha256:" + strings.Repeat("0", 64)

// cmpDigest is the image's pinned digest, from the digest field or after @ in the ref.
func cmpDigest(im Image) string {
	if im.Digest != "" {
		return im.Digest
	}
	if at := strings.Index(im.Ref, "@"); at >= 0 {
		return im.Ref[at+1:]
	}
	return ""
}

// tagOf is ref without a digest, for the fix a message gives.
func tagOf(ref string) string {
	if at := strings.Index(ref, "@"); at >= 0 {
		return ref[:at]
	}
	return ref
}

// The range a builder snapshot must be in: from 2023-03-01, the first moment Ubuntu's
// snapshot service serves, to 2100-01-01 (as source_date_epoch: a typo lands past it).
var (
	minSnapshot = time.Date(2023, 3, 1, 0, 0, 0, 0, time.UTC)
	maxSnapshot = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// checkSnapshot checks images.*.snapshot: only the builder has one (the runtime image
// installs nothing), and it is an apt snapshot ID (SnapshotLayout) within the range above.
func checkSnapshot(field string, im Image) error {
	if im.Snapshot == "" {
		return nil
	}
	f := field + ".snapshot"
	if field != "images.builder" {
		return &fieldError{f, "is set, but only the builder installs packages from the archive: drop it here (the builder's is images.builder.snapshot)"}
	}
	t, err := time.Parse(SnapshotLayout, im.Snapshot)
	if err != nil || t.Format(SnapshotLayout) != im.Snapshot {
		return &fieldError{f, fmt.Sprintf("%q is not a snapshot ID as apt's --snapshot takes it: YYYYMMDDTHHMMSSZ in UTC, like 20261201T000000Z (date -u +%%Y%%m%%dT%%H%%M%%SZ)", im.Snapshot)}
	}
	if t.Before(minSnapshot) || !t.Before(maxSnapshot) {
		return &fieldError{f, fmt.Sprintf("%s is outside %s .. %s: the archive's snapshots start on 2023-03-01; give the moment the builder's packages were taken, e.g. the day the lock was last updated", im.Snapshot, minSnapshot.Format(SnapshotLayout), maxSnapshot.Format(SnapshotLayout))}
	}
	return nil
}

// redactRef hides what comes before an @ that is no digest: it is likely user:password.
func redactRef(ref string) string {
	at := strings.LastIndex(ref, "@")
	if at < 0 {
		return ref
	}
	return "xxxxx" + ref[at:]
}

// strictJSON refuses what encoding/json would quietly accept: bytes that are not UTF-8
// (decoded as U+FFFD) and an object key given twice at any depth (the last one would win,
// so a second "sha256" could override the reviewed one). encoding/json matches keys to
// fields regardless of case, so "SHA256" and "sha256" count as the same key.
func strictJSON(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("parsing: the lock is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		path   string
		object bool
		keys   map[string]string // folded key -> key as written
		key    string            // the current key (object), awaiting its value
		hasKey bool              // key is set
		index  int               // the next element's index (array)
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // the decoder in Parse reports the syntax error itself
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object && !top.hasKey {
			k := tok.(string)
			folded := strings.ToLower(k)
			if first, dup := top.keys[folded]; dup {
				return &fieldError{jsonPath(top.path, k), fmt.Sprintf("key %s appears twice in the same object (first as %s): a key is given once (JSON keys match fields regardless of case, and the last one would silently win)", quoteKey(k), quoteKey(first))}
			}
			top.keys[folded] = k
			top.key, top.hasKey = k, true
			continue
		}
		// A value: its path, then the container it opens, if any.
		p := ""
		if top != nil {
			if top.object {
				p, top.hasKey = jsonPath(top.path, top.key), false
			} else {
				p = fmt.Sprintf("%s[%d]", top.path, top.index)
				top.index++
			}
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{path: p, object: d == '{', keys: map[string]string{}})
		}
	}
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// jsonPath names a key the way fieldError names fields (components[3].sha256); a key that is
// not a plain name is quoted and cut short.
func jsonPath(parent, key string) string {
	if plainKeyRE.MatchString(key) {
		if parent == "" {
			return key
		}
		return parent + "." + key
	}
	return parent + "[" + quoteKey(key) + "]"
}

func quoteKey(k string) string {
	if len(k) > 64 {
		k = strings.ToValidUTF8(k[:64], "") + "..."
	}
	return strconv.QuoteToASCII(k)
}

// CheckPlainURL applies the lock's rule for URL text (no white space, control characters,
// percent-encoded controls, non-ASCII, quotes, backslashes or $) to a URL given at run time,
// such as a mirror a Dockerfile is rendered with: BuildKit expands $ in ADD, and a newline
// would start another instruction.
func CheckPlainURL(raw string) error { return checkURLText(raw) }
