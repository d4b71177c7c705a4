package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ci base refuses what it cannot do before anything is fetched, exit 2, naming the flag.
func TestBaseUsageErrors(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists")
	if err := os.Mkdir(exists, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"base", "--mirror", "http://127.0.0.1:9/debian"}, "--output PATH is required"},
		{[]string{"base", "--output", filepath.Join(dir, "b")}, "no Debian mirror given"},
		{[]string{"base", "--mirror", "ftp://x/debian", "--output", filepath.Join(dir, "b")}, `"ftp://x/debian" is not an http(s) URL`},
		{[]string{"base", "--mirror", "http://127.0.0.1:9/debian", "--output", exists}, "exists: choose a new path"},
		{[]string{"base", "--mirror", "http://127.0.0.1:9/debian", "--output", filepath.Join(dir, "b"), "--arch", "s390x"}, `--arch "s390x"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming %q and nothing on stdout", c.args, code, stderr.String(), c.want)
		}
	}
}

// --runtime-image takes the local spellings, and a wrong one stops the build before the
// preflight, exit 2, naming the input; --builder-image says why it takes a registry only.
func TestBuildLocalImageUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--runtime-image", "oci:" + filepath.Join(dir, "missing")}, "--runtime-image: oci:" + filepath.Join(dir, "missing") + ": stat"},
		{[]string{"--runtime-image", "docker-archive:" + filepath.Join(dir, "missing.tar")}, "no such file or directory"},
		{[]string{"--engine", "dagger", "--builder-image", "oci:" + dir}, "the builder image is pulled by the Dagger engine and takes a registry reference"},
	} {
		args := append([]string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(t.TempDir(), "tree")}, c.args...)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming %q", args, code, stderr.String(), c.want)
		}
		if strings.Contains(stderr.String(), "preflight: started") {
			t.Errorf("%q: the preflight ran: %s", args, stderr.String())
		}
	}
}

// ci tags with nothing to move prints nothing, says why on stderr and exits 0; a pull
// request's ref moves no tag even with a commit (docs/tags.md).
func TestTagsWithNothingToMove(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tags", "--ref", "refs/pull/1/merge", "--revision", strings.Repeat("ab", 20)}, "is a pull request: it moves no tag"},
		{[]string{"tags", "--ref", "refs/heads/feature"}, "without --revision moves no tag"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		if code != 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 0, nothing printed, a note naming %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
}

// A preflight that fails ends its step with a line of its own, before the error: no
// "started" is left without an end.
func TestFailedPreflightHasAnEndLine(t *testing.T) {
	bogus := filepath.Join(t.TempDir(), "bogus.tar")
	if err := os.WriteFile(bogus, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"build", "--engine", "host", "--no-smoke", "--output", filepath.Join(t.TempDir(), "nginx.tar"), "--runtime-image", "docker-archive:" + bogus}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	log := stderr.String()
	started, failed := strings.Index(log, "preflight: started"), strings.Index(log, "preflight: failed after")
	if code == 0 || started < 0 || failed < started || !strings.Contains(log[failed:], "docker-archive:"+bogus) {
		t.Errorf("exit %d, stderr:\n%s\nwant a failure, preflight: started, then preflight: failed after ..., then the error naming %s", code, log, bogus)
	}
}
