package safeio

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"
)

// The one redaction rule for text that is printed or written (errors, logs, a pull request
// body): credentials a URL carries, the value of an Authorization-style credential (Basic,
// Bearer, token), and any secret the caller knows of (a token, a password), also in the
// base64 form a Basic credential gives it, are replaced by "xxxxx". A server may echo what
// it was sent (a 401 body quoting the token, a registry quoting Basic credentials): that
// text goes through here before anyone sees it.

var (
	urlUserinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s"'<>]*)@`)
	credentialRE  = regexp.MustCompile(`(?i)\b(basic|bearer)(\s+)([A-Za-z0-9+/=._~-]{8,})`)
	assignmentRE  = regexp.MustCompile(`(?i)\b(token|password|passwd|secret)(=)([A-Za-z0-9+/=._~-]{4,})`)
)

// Redact returns text with credentials replaced (see above); secrets shorter than 4 bytes
// are ignored (they would blank out ordinary words).
func Redact(text string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) < 4 {
			continue
		}
		text = strings.ReplaceAll(text, s, "xxxxx")
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			if e := enc.EncodeToString([]byte(s)); len(e) >= 4 {
				text = strings.ReplaceAll(text, e, "xxxxx")
			}
		}
	}
	text = urlUserinfoRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := urlUserinfoRE.FindStringSubmatch(m)
		user, _, hasPass := strings.Cut(sub[2], ":")
		if hasPass {
			return sub[1] + user + ":xxxxx@"
		}
		return sub[1] + "xxxxx@"
	})
	text = credentialRE.ReplaceAllString(text, "${1}${2}xxxxx")
	return assignmentRE.ReplaceAllString(text, "${1}${2}xxxxx")
}

// RedactURL returns raw with any password replaced by "xxxxx" (and, when raw does not parse
// as a URL, everything between "//" and the first "@" after it), for logs and errors.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if i := strings.Index(raw, "//"); i >= 0 {
		if j := strings.Index(raw[i+2:], "@"); j >= 0 {
			return raw[:i+2] + "xxxxx" + raw[i+2+j:]
		}
	}
	return raw
}
