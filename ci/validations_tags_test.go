package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// longVersionLock writes the test lock with every version as long as a version may be (4
// parts of 9 digits): each is valid, but the exact stack tag made from them is 176
// characters, more than a registry takes.
func longVersionLock(t *testing.T) string {
	l, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Components {
		c.Version = "123456789.123456789.123456789.123456789"
		l.SetComponent(c)
	}
	file := filepath.Join(t.TempDir(), "long.lock.json")
	if err := l.Write(file); err != nil {
		t.Fatal(err)
	}
	return file
}

// Issue 35: a tag outside the OCI tag grammar ([a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}), whether
// --image names it or the lock's versions make it, is refused before anything is pushed or
// fetched (ci build --push, ci manifest, ci tags), exit 2, naming the tag and the rule; a
// --ref with a control character, or a release tag with leading zeros (v01.2.3 is not a
// version), is refused the same way.
func TestBadTagsAndRefsRefusedBeforeAnyPush(t *testing.T) {
	srv, requests := countingMirror(t)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/nginx"
	long := longVersionLock(t)
	digest := "sha256:" + strings.Repeat("a", 64)
	rev := strings.Repeat("b", 40)
	build := func(args ...string) []string {
		return append([]string{"build", "--engine", "host", "--push", "--mirror", srv.URL, "--cache", t.TempDir()}, args...)
	}
	tag129 := strings.Repeat("t", 129)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"build: a 129-character tag", build("--image", reg+":"+tag129), []string{"--image", "129 characters long", "1 to 128 letters"}},
		{"build: a tag starting with -", build("--image", reg+":-edge"), []string{`tag "-edge" is not a valid tag`, "does not start with '.' or '-'"}},
		{"build: a tag starting with .", build("--image", reg+":ok,.edge"), []string{`tag ".edge" is not a valid tag`}},
		{"build: the lock's stack tag is too long", build("--image", reg, "--lock", long), []string{"made from the lock's versions", "176 characters long", "--image REPO:TAG"}},
		{"build: a --ref with a control character", build("--image", reg, "--ref", "refs/heads/main\x1b[2J"), []string{"--ref", "control or white-space character U+001B"}},
		{"build: a release tag with leading zeros", build("--image", reg, "--ref", "refs/tags/v01.2.3"), []string{"--ref", "not a release version", "v1.2.3, not v01.2.3"}},
		{"manifest: a tag starting with .", []string{"manifest", "--image", reg + ":.edge", digest}, []string{`tag ".edge" is not a valid tag`}},
		{"manifest: a 129-character tag", []string{"manifest", "--image", reg + ":" + tag129, "--dry-run", digest}, []string{"129 characters long"}},
		{"manifest: the lock's stack tag is too long", []string{"manifest", "--image", reg, "--lock", long, digest}, []string{"176 characters long"}},
		{"manifest: a --ref with a newline", []string{"manifest", "--image", reg + ":edge", "--ref", "refs/heads/a\nb", digest}, []string{"--ref", "U+000A"}},
		{"tags: the lock's stack tag is too long", []string{"tags", "--lock", long}, []string{"176 characters long"}},
		{"tags: a release tag with leading zeros", []string{"tags", "--ref", "refs/tags/v01.2.3", "--revision", rev}, []string{"not a release version"}},
		{"tags: a --ref with a control character", []string{"tags", "--ref", "refs/heads/main\r", "--revision", rev}, []string{"U+000D"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runWithin(t, 10*time.Second, c.args...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d, want 2 (usage) and nothing on stdout\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the registry or mirror before the refusals", n)
	}
	// What the grammar allows still passes: a release tag without leading zeros, and 0 alone.
	for ref, want := range map[string]string{"refs/tags/v1.2.3": ",v1.2.3", "refs/tags/v0.10.0": ",v0.10.0"} {
		code, stdout, stderr := runWithin(t, 10*time.Second, "tags", "--ref", ref, "--revision", rev)
		if code != 0 || !strings.HasSuffix(strings.TrimSpace(stdout), want) {
			t.Errorf("tags --ref %s: exit %d, printed %q, want it to end in %q\n%s", ref, code, stdout, want, stderr)
		}
	}
}
