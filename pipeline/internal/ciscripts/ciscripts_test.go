// Package ciscripts holds the tests that keep the CI scripts (.ci/) from changing the machine
// they run on beyond installing packages: no process is killed by name, the services Debian's
// packages would start on install are kept from starting, and apt sources stay private.
package ciscripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// rules are what a script must not do, each as a pattern over its lines (comments removed).
var rules = []struct {
	name string
	bad  *regexp.Regexp
}{
	{"kills processes by name (stop what the tests started, by PID)", regexp.MustCompile(`\b(pkill|killall)\b|\bkill\s+.*\$\(\s*pgrep`)},
	{"writes the system's apt configuration (use a private one, as .ci/fetch-sources does)", regexp.MustCompile(`(>|tee\s+(-a\s+)?|cp\s+\S+\s+|mv\s+\S+\s+)\s*"?/etc/apt`)},
	{"enables or starts a service", regexp.MustCompile(`systemctl\s+(enable|start|restart)\b|service\s+\S+\s+start`)},
}

// check returns the broken rules of a script's text, one line each.
func check(text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		code, _, _ := strings.Cut(line, "#")
		if strings.HasPrefix(strings.TrimSpace(line), "#!") {
			continue
		}
		for _, r := range rules {
			if r.bad.MatchString(code) {
				out = append(out, strings.TrimSpace(line)+": "+r.name+" (line "+strconv.Itoa(i+1)+")")
			}
		}
	}
	return out
}

func scripts(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), ".ci")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	if len(out) < 4 {
		t.Fatalf("found only %d scripts in %s", len(out), dir)
	}
	return out
}

func TestScriptsLeaveTheMachineAlone(t *testing.T) {
	for name, text := range scripts(t) {
		for _, v := range check(text) {
			t.Errorf(".ci/%s: %s", name, v)
		}
	}
}

// TestInstallKeepsServicesFromStarting: Debian's nginx and docker-registry packages start
// their services on install; install-deps keeps them from starting (a policy-rc.d for the
// install) and disables what the install enabled.
func TestInstallKeepsServicesFromStarting(t *testing.T) {
	text := scripts(t)["install-deps"]
	for _, want := range []string{"policy-rc.d", "exit 101", "systemctl disable"} {
		if !strings.Contains(text, want) {
			t.Errorf(".ci/install-deps lacks %q", want)
		}
	}
	if !strings.Contains(scripts(t)["fetch-sources"], "APT_CONFIG=") {
		t.Error(".ci/fetch-sources does not use a private apt configuration (APT_CONFIG)")
	}
}

// TestRulesCatchMistakes: each rule fires on the kind of line it is for, and not on its
// comment.
func TestRulesCatchMistakes(t *testing.T) {
	for _, bad := range []string{
		"pkill -x docker-registry 2>/dev/null || true",
		"killall nginx",
		"kill $(pgrep nginx)",
		"cat > /etc/apt/sources.list.d/x.sources <<'SRC'",
		"echo deb-src x | tee -a /etc/apt/sources.list",
		"systemctl enable --now docker-registry",
		"service nginx start",
	} {
		if len(check(bad)) == 0 {
			t.Errorf("no rule caught %q", bad)
		}
	}
	for _, fine := range []string{
		"# pkill would be wrong here",
		`kill "$(cat "$pidfile")"`,
		`export APT_CONFIG=$apt/apt.conf`,
		"systemctl disable nginx.service",
	} {
		if v := check(fine); len(v) > 0 {
			t.Errorf("%q flagged: %q", fine, v)
		}
	}
}
