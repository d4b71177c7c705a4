package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// readmeShellLines are the lines of the shell code blocks of README.md and then docs/*.md
// whose first word is program, continuation lines joined, as a shell would read them.
func readmeShellLines(t testing.TB, program string) []string {
	t.Helper()
	var out []string
	for _, d := range docFiles(t) {
		out = append(out, shellLines(d.text, program)...)
	}
	return out
}

// shellLines are the lines of a document's shell code blocks whose first word is program.
func shellLines(doc, program string) []string {
	var out []string
	in, cur := false, ""
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if m := fence.FindStringSubmatch(line); m != nil {
			in = !in && shellFences[m[2]]
			continue
		}
		if !in {
			continue
		}
		if cur != "" {
			cur += " " + strings.TrimSuffix(trimmed, "\\")
		} else if strings.HasPrefix(trimmed, program+" ") {
			cur = strings.TrimSuffix(trimmed, "\\")
		}
		if cur != "" && !strings.HasSuffix(trimmed, "\\") {
			out = append(out, strings.Join(strings.Fields(cur), " "))
			cur = ""
		}
	}
	return out
}

// The README's podman lines (the first screen's too) mount a tmpfs owned by the container's
// user (:U, as the smoke test's runc does) on every directory the runtime contract names,
// its docker lines a plain one (Docker's is 1777), and all raise the descriptor limit to
// what nginx.conf asks for.
func TestReadmeRunLinesFollowTheContract(t *testing.T) {
	lines := readmeShellLines(t, "podman")
	if len(lines) < 3 {
		t.Fatalf("README.md and docs/ have %d podman run lines, want at least the first screen's and the two of Run it: %q", len(lines), lines)
	}
	docker := readmeShellLines(t, "docker")
	if len(docker) < 1 {
		t.Fatal("README.md and docs/ have no docker run line")
	}
	conf, err := os.ReadFile("../pipeline/plan/files/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^worker_rlimit_nofile (\d+);`).FindSubmatch(conf)
	if m == nil {
		t.Fatal("nginx.conf sets no worker_rlimit_nofile")
	}
	ulimit := "--ulimit nofile=" + string(m[1]) + ":" + string(m[1])
	for _, l := range append(lines, docker...) {
		for _, p := range plan.Runtime.Tmpfs() {
			want := "--tmpfs " + p + ":U "
			if strings.HasPrefix(l, "docker ") {
				want = "--tmpfs " + p + " "
			}
			if !strings.Contains(l, want) {
				t.Errorf("README.md or docs/: `%s` lacks %s", l, want)
			}
		}
		if !strings.Contains(l, "--read-only") || !strings.Contains(l, ulimit) {
			t.Errorf("README.md or docs/: `%s` lacks --read-only or %s", l, ulimit)
		}
	}
}

// The first screen says build it, then run it, then test it, with an image name that
// parses as typed (no capitals for the reader to replace first).
func TestReadmeFirstScreen(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "```sh\n")
	end := strings.Index(doc[start+6:], "```")
	if start < 0 || end < 0 || start > 40 {
		t.Fatalf("README.md does not open with a shell block")
	}
	var firsts []string
	for _, l := range strings.Split(strings.TrimSpace(doc[start+6:start+6+end]), "\n") {
		code, _, _ := strings.Cut(l, "#")
		w := strings.Fields(code)
		firsts = append(firsts, strings.Join(w[:min(3, len(w))], " "))
		if regexp.MustCompile(`ghcr\.io/[^ ]*[A-Z]`).MatchString(l) {
			t.Errorf("README.md's first screen names an image with capitals, which does not parse as typed: %s", l)
		}
	}
	want := []string{"go run ./ci", "podman run --read-only", "sudo .ci/test"}
	if strings.Join(firsts, "|") != strings.Join(want, "|") {
		t.Errorf("README.md's first screen runs %q, want build, run, test: %q", firsts, want)
	}
	for _, c := range docCommands(doc[:start+6+end]) {
		if !c.partial {
			var stderr strings.Builder
			if code := checkUsage(c.args, &stderr); code != 0 {
				t.Errorf("README.md %s as typed: exit %d: %s", c, code, stderr.String())
			}
		}
	}
}

// Each tls.conf README.md and docs/ show is the one nginx.conf documents (which a shell-less image
// cannot print).
func TestReadmeTLSConfIsTheImages(t *testing.T) {
	conf, err := os.ReadFile("../pipeline/plan/files/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	c := string(conf)
	from := strings.Index(c, "# ---- BEGIN tls.conf ----\n")
	to := strings.Index(c, "# ---- END tls.conf ----")
	if from < 0 || to < from {
		t.Fatal("nginx.conf has no BEGIN/END tls.conf block")
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(c[from+len("# ---- BEGIN tls.conf ----\n"):to]), "\n") {
		want = append(want, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
	}
	block, shown := indentLines(strings.Join(want, "\n"), "  "), 0
	for _, d := range docFiles(t) {
		if !strings.Contains(d.text, "listen 8443 ssl") {
			continue
		}
		shown++
		if !strings.Contains(d.text, block) {
			t.Errorf("%s shows a tls.conf that is not nginx.conf's block verbatim:\n%s", d.name, strings.Join(want, "\n"))
		}
	}
	if shown < 2 {
		t.Errorf("%d documents show tls.conf, want README.md's Run it and docs/using.md", shown)
	}
}

func indentLines(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
