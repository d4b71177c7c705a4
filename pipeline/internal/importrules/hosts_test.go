package importrules

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// No package registry's host is written in the repository (developers' guide): the Debian
// mirror comes from the machine's apt sources at run time (testenv.DebianMirror, which
// .ci/fetch-sources and basetest use), and test data names a placeholder origin
// (debian.mirror.invalid) that --mirror maps to the loopback mirror by file name. Prose names
// the registry generically ("Debian's mirror"). The hosts are written here as regular
// expressions (dots escaped), so this file does not name them itself.

// registryHosts are the package registries' hosts no tracked file may name, by registry.
var registryHosts = []struct{ registry, re string }{
	{"Debian's archive", `(deb|ftp|security|snapshot|httpredir)\.debian\.org|ftp\.[a-z]{2}\.debian\.org`},
	{"Ubuntu's archive", `(archive|security|ports)\.ubuntu\.com`},
	{"the Go module proxy and checksum database", `(proxy|sum)\.golang\.org`},
	{"the npm registry", `registry\.npmjs\.org|registry\.yarnpkg\.com`},
	{"PyPI", `pypi\.org|files\.pythonhosted\.org`},
	{"Rust's crate registry", `(static\.|index\.)?crates\.io`},
}

// registryHostsAllowed are the files (repo-relative) that may name a registry host, with
// why. Empty: no place in the repository needs to. An entry that names no host fails the
// test, so the list only holds what is true.
var registryHostsAllowed = map[string]string{}

// registryHostRE matches any of registryHosts as a whole host name (not inside a longer one
// such as security-tracker.<Debian's domain>, nor as this file's escaped patterns).
var registryHostRE = func() *regexp.Regexp {
	var alts []string
	for _, h := range registryHosts {
		alts = append(alts, h.re)
	}
	return regexp.MustCompile(`(?i)(?:^|[^a-z0-9.\\-]|%2f)((?:` + strings.Join(alts, "|") + `))(?:$|[^a-z0-9-])`)
}()

// registryDomains are the domains registryHosts lie in (escaped like them): a file that
// names none of them (in any case) is not searched with the expression, which keeps the rule
// fast.
var registryDomains = func() [][]byte {
	var out [][]byte
	for _, d := range []string{`debian\.org`, `ubuntu\.com`, `golang\.org`, `npmjs\.org`, `yarnpkg\.com`, `pypi\.org`, `pythonhosted\.org`, `crates\.io`} {
		out = append(out, []byte(strings.ReplaceAll(d, `\.`, ".")))
	}
	return out
}()

// mayNameRegistry reports whether text holds one of registryDomains.
func mayNameRegistry(text []byte) bool {
	lower := bytes.ToLower(text)
	for _, d := range registryDomains {
		if bytes.Contains(lower, d) {
			return true
		}
	}
	return false
}

// registryOf names the registry a matched host belongs to.
func registryOf(host string) string {
	for _, h := range registryHosts {
		if regexp.MustCompile(`(?i)^(?:` + h.re + `)$`).MatchString(host) {
			return h.registry
		}
	}
	return "a package registry"
}

// hostViolations lists, one per line, where the files (repo-relative path -> content) name a
// registry host outside registryHostsAllowed, and the allowed files that name none.
func hostViolations(files map[string][]byte, allowed map[string]string) []string {
	var out []string
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		text := files[name]
		found := false
		if !mayNameRegistry(text) {
			text = nil
		}
		for _, m := range registryHostRE.FindAllSubmatchIndex(text, -1) {
			found = true
			if allowed[name] == "" {
				host := string(text[m[2]:m[3]])
				line := bytes.Count(text[:m[2]], []byte("\n")) + 1
				out = append(out, fmt.Sprintf("%s:%d names %s (%s): read the Debian mirror from the apt sources at run time (testenv.DebianMirror), "+
					"use a placeholder origin such as debian.mirror.invalid in test data, or name the registry generically in prose", name, line, host, registryOf(host)))
			}
		}
		if !found && allowed[name] != "" {
			out = append(out, fmt.Sprintf("%s is allowed to name a registry host (%s) but names none: drop it from registryHostsAllowed", name, allowed[name]))
		}
	}
	for name := range allowed {
		if _, ok := files[name]; !ok {
			out = append(out, fmt.Sprintf("%s is in registryHostsAllowed but is not a tracked file", name))
		}
	}
	return out
}

// trackedFiles are the checkout's files as git tracks them (path -> content).
func trackedFiles(t *testing.T) map[string][]byte {
	t.Helper()
	git := testenv.Tool(t, "git", "git")
	root := testenv.RepoRoot()
	cmd := exec.Command(git, "-C", root, "ls-files", "-z")
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	files := map[string][]byte{}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	if len(files) < 100 {
		t.Fatalf("git lists only %d files in %s", len(files), root)
	}
	return files
}

func TestNoRegistryHostInTrackedFiles(t *testing.T) {
	for _, v := range hostViolations(trackedFiles(t), registryHostsAllowed) {
		t.Error(v)
	}
}

// TestPlantedRegistryHostsFail proves the rule catches what it names: a real tracked file
// with one registry host planted into it gains exactly that violation (the other files are
// unchanged, so only it is checked again); look-alikes do not trip it, and a stale
// allow-list entry does.
func TestPlantedRegistryHostsFail(t *testing.T) {
	real := trackedFiles(t)
	unescape := strings.NewReplacer(`\.`, ".")
	for _, c := range []struct{ file, line, host string }{
		{".ci/fetch-sources", `curl -fsS -o x "http://` + unescape.Replace(`deb\.debian\.org`) + `/debian/pool/main/n/nginx/x.asc"`, unescape.Replace(`deb\.debian\.org`)},
		{"pipeline/lock/testdata/stack.twin.lock.json", `"url": "https://` + unescape.Replace(`DEB\.Debian\.org`) + `/debian/pool/main/z/zlib/z.tar.gz",`, unescape.Replace(`DEB\.Debian\.org`)},
		{"README.md", "fetched from " + unescape.Replace(`security\.debian\.org`) + ".", unescape.Replace(`security\.debian\.org`)},
		{"pipeline/image/testdata/sbom.golden.spdx.json", `"referenceLocator": "pkg:generic/zlib@1.3.1?download_url=https%3A%2F%2F` + unescape.Replace(`deb\.debian\.org`) + `%2Fdebian%2Fpool",`, unescape.Replace(`deb\.debian\.org`)},
		{"README.md", "GOPROXY=https://" + unescape.Replace(`proxy\.golang\.org`) + ",direct", unescape.Replace(`proxy\.golang\.org`)},
		{"pipeline/plan/smokeclient.go", `// npm config set registry https://` + unescape.Replace(`registry\.npmjs\.org`) + `/`, unescape.Replace(`registry\.npmjs\.org`)},
		{"pipeline/standin/standin.go", `o.Mirror = "http://` + unescape.Replace(`archive\.ubuntu\.com`) + `/ubuntu"`, unescape.Replace(`archive\.ubuntu\.com`)},
	} {
		if real[c.file] == nil {
			t.Fatalf("no tracked file %s", c.file)
		}
		before := map[string]bool{}
		for _, v := range hostViolations(map[string][]byte{c.file: real[c.file]}, registryHostsAllowed) {
			before[v] = true
		}
		planted := append(append(append([]byte(nil), real[c.file]...), '\n'), c.line...)
		var got []string
		for _, v := range hostViolations(map[string][]byte{c.file: planted}, registryHostsAllowed) {
			if !before[v] {
				got = append(got, v)
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], c.file+":") || !strings.Contains(got[0], " names "+c.host+" (") {
			t.Errorf("planted %q in %s: got %q, want one violation naming %s", c.line, c.file, got, c.host)
		}
	}
	for _, fine := range []string{
		"https://debian.mirror.invalid/debian/pool/main/z/zlib/z.tar.gz",
		"pkg:generic/zlib@1.3.1?download_url=https%3A%2F%2Fdebian.mirror.invalid%2Fdebian%2Fpool",
		"Link: https://security-tracker.debian.org/tracker/CVE-2024-1",
		"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/",
		"the Debian mirror from the apt sources",
		`{"Debian's archive", ` + "`" + `(deb|ftp)\.debian\.org` + "`" + `}`,
		"github.com/golang/protobuf v1.5.4 h1:i7eJL8qZTpSEXOPTxNKhASYpMn+8e5Q6AdndVa1dWek=",
	} {
		if v := hostViolations(map[string][]byte{"x": []byte(fine)}, nil); len(v) > 0 {
			t.Errorf("%q flagged: %q", fine, v)
		}
	}
	if v := hostViolations(map[string][]byte{"x": []byte("no host here")}, map[string]string{"x": "a stale reason"}); len(v) != 1 {
		t.Errorf("a stale allow-list entry: %q", v)
	}
}
