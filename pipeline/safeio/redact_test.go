package safeio

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const tok = "ghp_s3cretT0kenValue1234"
	basic := base64.StdEncoding.EncodeToString([]byte("robot:pa55word-x"))
	for _, c := range []struct{ in, want string }{
		{`{"message":"Bad credentials: ` + tok + `"}`, `{"message":"Bad credentials: xxxxx"}`},
		{"Authorization: Bearer " + tok, "Authorization: Bearer xxxxx"},
		{"unauthorized: Basic " + basic + " rejected", "unauthorized: Basic xxxxx rejected"},
		{"GET https://robot:pa55word-x@127.0.0.1:5000/v2/", "GET https://robot:xxxxx@127.0.0.1:5000/v2/"},
		{"mirror http://user@host/x", "mirror http://xxxxx@host/x"},
		{"token=abcdefgh12345678", "token=xxxxx"},
		{"plain text, no secret: https://nginx.org/download/nginx-1.26.3.tar.gz", "plain text, no secret: https://nginx.org/download/nginx-1.26.3.tar.gz"},
	} {
		got := Redact(c.in, tok, "pa55word-x")
		if got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, s := range []string{tok, "pa55word-x", basic} {
			if strings.Contains(got, s) {
				t.Errorf("Redact(%q) = %q still holds %q", c.in, got, s)
			}
		}
	}
	// The token's base64 form (what a Basic credential carries) is caught too.
	if got := Redact("echo: "+base64.StdEncoding.EncodeToString([]byte(tok)), tok); strings.Contains(got, base64.StdEncoding.EncodeToString([]byte(tok))) {
		t.Errorf("base64 of the token kept: %s", got)
	}
}

// TestRedactURL: a URL's password is replaced and the rest kept, also when it does not parse.
func TestRedactURL(t *testing.T) {
	if got := RedactURL("http://u:s3cret@127.0.0.1:1/x"); strings.Contains(got, "s3cret") || !strings.Contains(got, "127.0.0.1:1/x") {
		t.Errorf("RedactURL = %q", got)
	}
	if got := RedactURL("https://u:s3cret@host/%zz"); strings.Contains(got, "s3cret") || !strings.Contains(got, "host/%zz") {
		t.Errorf("RedactURL of a URL that does not parse = %q", got)
	}
}
