//go:build integration

package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// readmeBlock is the first shell block after README.md's heading, its commands with their
// continuation lines joined and their trailing comments dropped.
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no heading %q", heading)
	}
	doc = doc[i:]
	from := strings.Index(doc, "```sh\n")
	if from < 0 {
		t.Fatalf("README.md has no sh block after %q", heading)
	}
	doc = doc[from+len("```sh\n"):]
	doc = doc[:strings.Index(doc, "```")]
	var out []string
	cur := ""
	for _, l := range strings.Split(doc, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if cur != "" {
			cur += " "
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\")
			continue
		}
		cur += l
		out = append(out, strings.TrimSpace(readmeComment.ReplaceAllString(cur, "")))
		cur = ""
	}
	return out
}

// readmeComment is a command line's trailing comment: two or more spaces, then #.
var readmeComment = regexp.MustCompile(`\s{2,}#.*$`)

// TestReadmeOfflineWalk walks README.md's offline path as a newcomer types it, every command
// of its block in order in one shell (the README's `&` server included): .ci/install-deps,
// .ci/fetch-sources, the mirror served with python3, `ci base` from the Debian mirror,
// `ci build --engine host ... --runtime-image oci:/tmp/base --output /tmp/nginx.tar` as root
// with its smoke tests, then, as the block's last line says, `podman load -i /tmp/nginx.tar`
// and the podman line of "Using the image", which must serve HTTPS. What it changes: the
// README's /tmp paths (a directory of the test), the server's port (a free one), sudo (the test runs as root), `go run` (the
// command built once) and the user cache (XDG_CACHE_HOME, under /var/cache/nginx-forge). As
// root, ci build caches its stages in the machine's shared cache, the tests' own, so the
// stack another test built is not compiled again.
func TestReadmeOfflineWalk(t *testing.T) {
	testenv.Root(t)
	testenv.Tool(t, "podman", "podman")
	testenv.Tool(t, "python3", "python3")
	needHostSmoke(t)
	testenv.MirrorDir(t) // the fetched sources (.ci/test fetched them): fetch-sources is then quick
	// The README's `ci base` line asks ./pipeline/testsupport/testenv/debianmirror for this
	// machine's Debian mirror, which reads it as testenv.DebianMirror does.
	if _, err := testenv.DebianMirror(); err != nil {
		testenv.Missing(t, "a Debian mirror in this machine's apt sources ("+err.Error()+")", "set NGINX_FORGE_DEBIAN_MIRROR")
	}
	line := readmePodmanTLSLine(t)
	needPorts(t, "8080", "8443")

	block := readmeBlock(t, "## Offline quick start")
	want := []string{".ci/install-deps", ".ci/fetch-sources", "python3 -m http.server", "ci base", "ci build --engine host"}
	if len(block) != len(want) {
		t.Fatalf("README's offline block has %d commands, the walk knows %d (%q): update this test with the README\n%s", len(block), len(want), want, strings.Join(block, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(block[i], w) {
			t.Fatalf("README's offline command %d is %q, want one with %q", i+1, block[i], w)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "ci"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	upstream := filepath.Dir(testenv.MirrorDir(t))
	tarball := filepath.Join(dir, "nginx.tar")
	subst := strings.NewReplacer(
		"/tmp/upstream", upstream,
		"/tmp/base", filepath.Join(dir, "base"),
		"/tmp/nginx.tar", tarball,
		"8000", port,
		"sudo ", "",
		"go run ./ci ", filepath.Join(bin, "ci")+" ",
	)
	var script strings.Builder
	script.WriteString("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
	for _, l := range block {
		script.WriteString(subst.Replace(l) + "\n")
	}
	t.Logf("the README's offline block as run:\n%s", script.String())
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = testenv.RepoRoot()
	// XDG_CACHE_HOME keeps the user cache (ci's verified sources) out of root's home; Go's
	// own build cache stays where it was.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME=/var/cache/nginx-forge/readme-walk", "GOCACHE="+strings.TrimSpace(string(gocache)))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(45 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		t.Fatalf("the offline block did not end in 45 min:\n%s", out.String())
	}
	if err != nil {
		t.Fatalf("the README's offline block failed after %s: %v\n%s", time.Since(start).Round(time.Second), err, out.String())
	}
	t.Logf("the offline block ran in %s:\n%s", time.Since(start).Round(time.Second), out.String())
	for _, w := range []string{"oci:" + filepath.Join(dir, "base"), "passed, 0 failed, 0 skipped"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the offline block's output lacks %q", w)
		}
	}
	if _, err := os.Stat(tarball); err != nil {
		t.Fatalf("the build wrote no %s: %v", tarball, err)
	}
	// The block's next step, in the README's words: "Then `podman load -i /tmp/nginx.tar` and
	// the run line of Run it".
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const load = "podman load -i /tmp/nginx.tar"
	if !strings.Contains(string(b), "Then `"+load+"` and the run line of [Run it]") {
		t.Fatalf("README.md's offline path no longer ends with %q and the run line: update this test with it", load)
	}
	runReadmePodmanLine(t, line, tarball, subst.Replace(load))
}
