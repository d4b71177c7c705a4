package lock

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// edited returns the test lock's text with old replaced (once, and it must be there) by new:
// hostile inputs that a map round trip (mutate) cannot express, such as a key given twice.
func edited(t *testing.T, old, new string) []byte {
	t.Helper()
	b, err := os.ReadFile(testLockFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("the test lock has no %q", old)
	}
	return []byte(strings.Replace(string(b), old, new, 1))
}

const nginxSHA = `"sha256": "69ee2b237744036e61d24b836668aad3040dda461fe6f570f1787eab570c75aa",`

// TestParseRefusesHostileText: issue 29's "one input, several verdicts". Each of these
// loaded (and some reached the Dockerfile) before the one strict validator.
func TestParseRefusesHostileText(t *testing.T) {
	other := `"sha256": "` + strings.Repeat("b", 64) + `",`
	nginxURL := `"url": "https://nginx.org/download/nginx-1.26.3.tar.gz",`
	url := func(u string) []byte { return []byte(`"url": "` + u + `",`) }
	for _, tc := range []struct {
		name     string
		old, new string
		field    string // the *fieldError's Field ("" when the error is no fieldError)
		want     string
	}{
		{"duplicate component key", nginxSHA, nginxSHA + "\n" + other, "components[3].sha256", `"sha256" appears twice`},
		{"duplicate key in other case", nginxSHA, nginxSHA + "\n" + strings.Replace(other, "sha256", "SHA256", 1), "components[3].SHA256", "regardless of case"},
		{"duplicate top-level key", `"schema": 1,`, `"schema": 1, "schema": 1,`, "schema", "twice"},
		{"duplicate key in an image", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/ubuntu:24.04", "ref": "evil.example/ubuntu:24.04"`, "images.builder.ref", "twice"},
		{"duplicate key in a signature", `"fingerprints": [`, `"fingerprints": [], "fingerprints": [`, "components[2].signature.fingerprints", "twice"},
		{"duplicate odd key", `"schema": 1,`, `"a\u202eb": 1, "a\u202eb": 2, "schema": 1,`, `["a\u202eb"]`, "twice"},
		{"version with a leading zero", `"version": "1.26.3"`, `"version": "01.26.3"`, "components[3] (nginx).version", "leading zeros"},
		{"version part too long", `"version": "1.26.3"`, `"version": "1.26.30000000000"`, "components[3] (nginx).version", "9 digits"},
		{"version rc0", `"version": "1.0.0rc"`, `"version": "1.0.0rc0"`, "components[5] (ngx_brotli).version", "rc0"},
		{"url with a space", nginxURL, string(url("https://nginx.org/download/nginx 1.26.3.tar.gz")), "components[3] (nginx).url", "white space"},
		{"url with %00", nginxURL, string(url("https://nginx.org/download/nginx-1.26.3.tar.gz%00.txt")), "components[3] (nginx).url", "control character"},
		{"url with %0a", nginxURL, string(url("https://nginx.org/download/x%0aRUN%20id/nginx-1.26.3.tar.gz")), "components[3] (nginx).url", "control character"},
		{"url with a control character", nginxURL, string(url(`https://nginx.org/download/nginx-1.26.3.tar.gz\u0007`)), "components[3] (nginx).url", "control character"},
		{"url with U+202E", nginxURL, string(url("https://nginx.org/download/nginx-1.26.3\u202ezg.rat.tar.gz")), "components[3] (nginx).url", "U+202E"},
		{"url with $", nginxURL, string(url("https://nginx.org/download/${HOME}nginx-1.26.3.tar.gz")), "components[3] (nginx).url", "$"},
		{"signature url with a tab", `.tar.gz.asc"`, `.tar.gz.asc\t"`, "components[2] (openssl).signature.url", "white space"},
		{"image ref with credentials", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "user:s3cret@docker.io/library/ubuntu:24.04"`, "images.builder.ref", "credentials"},
		{"image ref with a bad digest", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/ubuntu@notadigest"`, "images.builder.ref", "sha256"},
		{"image digest notadigest", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/ubuntu:24.04", "digest": "notadigest"`, "images.builder.digest", "notadigest"},
		{"image digests that differ", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/ubuntu@sha256:` + strings.Repeat("a", 64) + `", "digest": "sha256:` + strings.Repeat("b", 64) + `"`, "images.builder.digest", "differs"},
		{"image ref with a newline", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/ubuntu:24.04\nRUN id"`, "images.builder.ref", "white space"},
		{"image ref with U+202E", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/ubuntu:24.04\u202e"`, "images.builder.ref", "U+202E"},
		{"image ref a URL", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "https://docker.io/library/ubuntu:24.04"`, "images.builder.ref", "URL"},
		{"image ref upper case", `"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/UBUNTU:24.04"`, "images.builder.ref", "not an image reference"},
		{"not UTF-8", `"track": "1.26",`, "\"track\": \"1.26\xff\",", "", "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(edited(t, tc.old, tc.new))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			if tc.field != "" {
				var fe *fieldError
				if !errors.As(err, &fe) || fe.Field != tc.field {
					t.Errorf("error %v: want a *fieldError for %s", err, tc.field)
				}
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q: %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}

// TestParseAcceptsPlainValues: the strict rules keep what real locks hold.
func TestParseAcceptsPlainValues(t *testing.T) {
	for _, tc := range []struct{ old, new string }{
		{`"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "docker.io/library/ubuntu@sha256:` + strings.Repeat("a", 64) + `", "digest": "sha256:` + strings.Repeat("a", 64) + `"`},
		{`"ref": "docker.io/library/ubuntu:24.04"`, `"ref": "127.0.0.1:5000/ubuntu:24.04"`},
		{`"version": "1.26.3"`, `"version": "0.26.10"`},
		{`"url": "https://nginx.org/download/nginx-1.26.3.tar.gz",`, `"url": "https://nginx.org/download/nginx-1.26.3%2Bdfsg.tar.gz?x=1",`},
	} {
		if _, err := Parse(edited(t, tc.old, tc.new)); err != nil {
			t.Errorf("%s: %v", tc.new, err)
		}
	}
}
