package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DebianMirrorEnv names a Debian archive to use instead of the one the apt sources name.
const DebianMirrorEnv = "NGINX_FORGE_DEBIAN_MIRROR"

// aptEtc is where apt's sources are read from.
const aptEtc = "/etc/apt"

// DebianMirror is the Debian archive this machine's apt uses, such as
// "http://mirror.example/debian" (no trailing slash): $NGINX_FORGE_DEBIAN_MIRROR when set,
// else the first http(s) URI of a deb or deb-src entry whose path ends in /debian (not
// /debian-security) in /etc/apt/sources.list, then /etc/apt/sources.list.d/*.list and
// *.sources (deb822) in name order, as apt reads them. No registry host is written in the
// repository: the tests and .ci/fetch-sources (through ./pipeline/testsupport/testenv/debianmirror)
// take the mirror from here. The error names the files read and the override.
func DebianMirror() (string, error) {
	return debianMirror(aptEtc, os.Getenv(DebianMirrorEnv))
}

func debianMirror(etc, override string) (string, error) {
	if override = strings.TrimSpace(override); override != "" {
		m, ok := debianURI(override, false)
		if !ok {
			return "", fmt.Errorf("%s=%q is not an http(s) URL of a Debian archive", DebianMirrorEnv, override)
		}
		return m, nil
	}
	files := []string{filepath.Join(etc, "sources.list")}
	parts, _ := filepath.Glob(filepath.Join(etc, "sources.list.d", "*"))
	sort.Strings(parts)
	for _, p := range parts {
		if strings.HasSuffix(p, ".list") || strings.HasSuffix(p, ".sources") {
			files = append(files, p)
		}
	}
	var read []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("reading the apt sources: %w", err)
		}
		read = append(read, f)
		var uris []string
		if strings.HasSuffix(f, ".sources") {
			uris = deb822URIs(string(b))
		} else {
			uris = oneLineURIs(string(b))
		}
		for _, u := range uris {
			if m, ok := debianURI(u, true); ok {
				return m, nil
			}
		}
	}
	if len(read) == 0 {
		read = []string{"none of " + strings.Join(files, ", ") + " exists"}
	}
	return "", fmt.Errorf("no Debian mirror in the apt sources (an http(s) URI ending in /debian of a deb or deb-src entry; read %s): set %s to one",
		strings.Join(read, ", "), DebianMirrorEnv)
}

// debianURI returns s without a trailing slash when it is an http(s) URL with a host (and,
// when archive is set, a path ending in /debian).
func debianURI(s string, archive bool) (string, bool) {
	s = strings.TrimRight(s, "/")
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	if archive && !strings.HasSuffix(u.Path, "/debian") {
		return "", false
	}
	return s, true
}

// deb822URIs are the URIs of the enabled deb and deb-src stanzas of a .sources file.
func deb822URIs(text string) []string {
	var out []string
	fields := map[string]string{}
	last := ""
	flush := func() {
		enabled := !strings.EqualFold(strings.TrimSpace(fields["enabled"]), "no")
		types := " " + strings.Join(strings.Fields(fields["types"]), " ") + " "
		if enabled && (strings.Contains(types, " deb ") || strings.Contains(types, " deb-src ")) {
			out = append(out, strings.Fields(fields["uris"])...)
		}
		fields, last = map[string]string{}, ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

// oneLineURIs are the URIs of the deb and deb-src lines of a one-line-style .list file
// ("deb [option=value ...] URI suite [component ...]").
func oneLineURIs(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "deb" && f[0] != "deb-src") {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}
