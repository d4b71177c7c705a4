package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// aptTree writes files (path under etc/apt -> text) and returns that etc/apt directory.
func aptTree(t *testing.T, files map[string]string) string {
	t.Helper()
	etc := filepath.Join(t.TempDir(), "etc", "apt")
	if err := os.MkdirAll(filepath.Join(etc, "sources.list.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return etc
}

// TestDebianMirrorFromAptSources: the Debian archive is the first deb or deb-src URI ending in
// /debian, from deb822 and one-line sources alike; security, disabled and other archives are
// passed over; the override wins.
func TestDebianMirrorFromAptSources(t *testing.T) {
	const m = "http://debian.mirror.invalid/debian"
	for _, c := range []struct {
		name     string
		files    map[string]string
		override string
		want     string
	}{
		{"deb822, as a Debian image ships it", map[string]string{"sources.list.d/debian.sources": "Types: deb\n" +
			"# http://snapshot.mirror.invalid/archive/debian/20250520T000000Z\nURIs: " + m + "\nSuites: trixie trixie-updates\nComponents: main\n" +
			"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://debian.mirror.invalid/debian-security\n" +
			"Suites: trixie-security\nComponents: main\n"}, "", m},
		{"deb822, security first, then a trailing slash and two URIs", map[string]string{"sources.list.d/a.sources": "Types: deb\n" +
			"URIs: https://security.mirror.invalid/debian-security\nSuites: trixie-security\n\n\n" +
			"types: deb-src deb\nuris: https://other.mirror.invalid/ubuntu\n  https://debian.mirror.invalid/debian/\nsuites: trixie\n"}, "", "https://debian.mirror.invalid/debian"},
		{"deb822, a disabled stanza and a non-deb type", map[string]string{"sources.list.d/a.sources": "Enabled: no\nTypes: deb\n" +
			"URIs: http://disabled.mirror.invalid/debian\n\nTypes: rpm\nURIs: http://rpm.mirror.invalid/debian\n\nTypes: deb\nURIs: " + m + "\n"}, "", m},
		{"one-line sources.list with options", map[string]string{"sources.list": "# deb http://commented.mirror.invalid/debian trixie main\n" +
			"deb [ arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg ] http://debian.mirror.invalid/debian-security trixie-security main\n" +
			"deb-src [signed-by=/k.gpg] " + m + " trixie main # the archive\n"}, "", m},
		{"sources.list before sources.list.d, .list beside .sources", map[string]string{
			"sources.list.d/a.list":    "deb http://first.mirror.invalid/debian trixie main\n",
			"sources.list.d/b.sources": "Types: deb\nURIs: " + m + "\n"}, "", "http://first.mirror.invalid/debian"},
		{"mirror+file and cdrom URIs are not an archive to download from", map[string]string{
			"sources.list": "deb mirror+file:/etc/apt/mirrors/debian.list trixie main\ndeb cdrom:[Debian]/ trixie main\ndeb " + m + " trixie main\n"}, "", m},
		{"the override wins", map[string]string{"sources.list.d/debian.sources": "Types: deb\nURIs: " + m + "\n"}, "https://override.mirror.invalid/debian/", "https://override.mirror.invalid/debian"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := debianMirror(aptTree(t, c.files), c.override)
			if err != nil || got != c.want {
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestDebianMirrorMissing: no Debian archive in the sources, or a bad override, is an error
// naming the files read and the override.
func TestDebianMirrorMissing(t *testing.T) {
	etc := aptTree(t, map[string]string{"sources.list.d/nodesource.sources": "Types: deb\nURIs: https://nodes.mirror.invalid/node_20.x\nSuites: nodistro\n",
		"sources.list.d/debian.sources.disabled": "Types: deb\nURIs: http://debian.mirror.invalid/debian\n"})
	_, err := debianMirror(etc, "")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(etc, "sources.list.d", "nodesource.sources")) || !strings.Contains(err.Error(), DebianMirrorEnv) ||
		strings.Contains(err.Error(), "disabled") {
		t.Errorf("no Debian archive: %v", err)
	}
	if _, err := debianMirror(aptTree(t, nil), ""); err == nil || !strings.Contains(err.Error(), "none of ") || !strings.Contains(err.Error(), DebianMirrorEnv) {
		t.Errorf("no sources at all: %v", err)
	}
	if _, err := debianMirror(etc, "debian.mirror.invalid/debian"); err == nil || !strings.Contains(err.Error(), DebianMirrorEnv) {
		t.Errorf("an override without a scheme: %v", err)
	}
}

// TestDebianMirrorHere: this machine's apt sources (or the override) name a mirror, or the
// error says where it looked.
func TestDebianMirrorHere(t *testing.T) {
	m, err := DebianMirror()
	if err != nil {
		t.Skipf("skipped: %v", err)
	}
	if !strings.HasSuffix(m, "/debian") && os.Getenv(DebianMirrorEnv) == "" {
		t.Errorf("%q does not end in /debian", m)
	}
}
