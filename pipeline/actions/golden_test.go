package actions

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The summary is read by people in pull requests and job pages: its layout must not drift
// unnoticed. Regenerate with `go test ./pipeline/actions -update`.
func TestSummaryGolden(t *testing.T) {
	golden := []Row{
		{Component: "zlib", Old: "1.3.1", New: "1.3.1"},
		{Component: "pcre2", Old: "10.44", New: "10.46"},
		{Component: "openssl", Old: "3.3.1", New: "3.3.5", EOL: "ended 2026-04-09"},
		{Component: "nginx", Old: "1.26.2", New: "1.26.3", EOL: "superseded by 1.28"},
		{Component: "builder image docker.io/library/ubuntu:24.04", Old: "", New: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{Component: "runtime image gcr.io/distroless/base-nossl-debian13:nonroot", Old: "sha256:1111111111111111111111111111111111111111111111111111111111111111", New: ""},
		// A refusal's fix wraps in its column (issue 40: 230 columns); a failed lookup's row
		// is the step summary's only.
		{Component: "openssl", Old: "refused", New: "3.5.4", EOL: "if upstream really changed signers, check the new key with them out of band, then adopt it in a reviewed change: go run ./ci lock trust openssl 0123456789ABCDEF0123456789ABCDEF01234567"},
		{Component: "pcre2", Old: "failed", EOL: "api.github.com: DNS failure (no such host), not transient", SummaryOnly: true},
	}
	for file, got := range map[string]string{
		"summary.md.golden":  UpdateTableMarkdown("Upstream updates", golden),
		"summary.txt.golden": updateTableText("Upstream updates", golden),
	} {
		path := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./pipeline/actions -update to create it)", err)
		}
		for _, l := range strings.Split(got, "\n") {
			if file == "summary.txt.golden" && len(l) > textWidth {
				t.Errorf("%s: a line of %d columns, over %d: %q", file, len(l), textWidth, l)
			}
		}
		if got != string(want) {
			t.Errorf("%s drifted (go test ./pipeline/actions -update if intended):\ngot:\n%s\nwant:\n%s", file, got, want)
		}
	}
}
