//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestAWSLCVariantPGOIsReproducible is the AWS-LC variant's pgo build as a person types it,
// through the command's flag parsing: `ci pgo-profile --tls aws-lc --zlib zlib-ng --in-repo
// --write` records a profile into a copy of the variant's test lock (zlib-ng, PCRE2, AWS-LC
// and nginx instrumented, trained with the same workload as the default build), then
// `ci build --tls aws-lc --zlib zlib-ng --optimize pgo` twice: the first on the shared build
// cache, smoke-tested in runc (the LTO'd, profile-optimized AWS-LC serves TLS 1.2/1.3,
// resumption, HTTP/2 and HTTP/3), the second from an empty cache of its own (every stage
// compiled again with the profile). Both must build from the recorded profile alone and give
// one image digest: the second compile shares nothing with the first, which is what makes
// it a reproducibility check, so it compiles every run. On a warm shared cache this costs one cold compile of the variant with
// LTO and the profile (about 6 minutes on 2 cores); cold, the training and a second compile
// more. It runs when asked, NGINX_FORGE_PGO_TEST=1 (.ci/test sets it), never under -short.
func TestAWSLCVariantPGOIsReproducible(t *testing.T) {
	needPGOTest(t, "it trains the AWS-LC variant once and builds it with PGO twice, once from an empty cache")
	mirrorURL, _, base := variantE2E(t)
	lockFile := lockCopy(t, testenv.AWSLCTestLockPath())
	work := filepath.Dir(lockFile)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	variant := []string{"--engine", "host", "--tls", "aws-lc", "--zlib", "zlib-ng", "--lock", lockFile, "--mirror", mirrorURL}

	start := time.Now()
	args := append(append([]string{"pgo-profile"}, variant...), "--cache", testenv.BuildCacheDir(), "--dir", filepath.Join(work, "pgo"), "--in-repo", "--write")
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	t.Logf("pgo-profile: %s\n%s", time.Since(start).Round(time.Second), stderr.String())
	l, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Profiles) != 1 || l.Profiles[0].URL != "profiles/"+l.Profiles[0].FileName() {
		t.Fatalf("the variant lock records %+v, want one profile beside it", l.Profiles)
	}
	// The profile holds counters for every profiled component.
	dirs := profileDirs(t, filepath.Join(work, filepath.FromSlash(l.Profiles[0].URL)))
	for _, c := range []string{"zlib_ng", "pcre2", "aws_lc", "nginx"} {
		if dirs[c] == 0 {
			t.Errorf("the recorded profile has no counters for %s (has %v)", c, dirs)
		}
	}

	imageLine := regexp.MustCompile(`(?m)^image: (sha256:[0-9a-f]{64}) `)
	var digests []string
	for i, c := range []struct {
		cache string
		smoke bool
	}{{testenv.BuildCacheDir(), true}, {t.TempDir(), false}} {
		start := time.Now()
		args := append(append([]string{"build"}, variant...), "--optimize", "pgo", "--cache", c.cache,
			"--runtime-image", base.String(), "--output", filepath.Join(work, "variant-pgo-"+string(rune('a'+i))+".tar"))
		if !c.smoke {
			args = append(args, "--no-smoke")
		}
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, &stdout, &stderr); code != 0 {
			t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		log := stderr.String()
		t.Logf("variant pgo build %d (%s): %s\n%s", i+1, map[bool]string{true: "shared cache, smoke-tested", false: "empty cache"}[c.smoke], time.Since(start).Round(time.Second), log)
		m := imageLine.FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("variant pgo build %d printed no image digest", i+1)
		}
		digests = append(digests, m[1])
		if !strings.Contains(log, "pgo-profile (linux/amd64): done") || strings.Contains(log, "pgo-train") || strings.Contains(log, "not reproducible") {
			t.Errorf("variant pgo build %d did not build from the recorded profile alone", i+1)
		}
		if c.smoke && !regexp.MustCompile(`smoke \(linux/amd64\): \d+ passed, 0 failed, 0 skipped`).MatchString(log) {
			t.Errorf("the variant pgo build's smoke run did not pass every check with none skipped")
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two variant pgo builds from the same lock and recorded profile: %s and %s", digests[0], digests[1])
	}
}

// profileDirs counts the .gcda files per component (pgo/<component>/) in a profile tarball.
func profileDirs(t *testing.T, file string) map[string]int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]int{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if parts := strings.Split(h.Name, "/"); len(parts) == 3 && parts[0] == "pgo" && strings.HasSuffix(parts[2], ".gcda") {
			out[parts[1]]++
		}
	}
}
