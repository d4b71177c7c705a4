//go:build integration

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestReadmePodmanLine runs the README's podman line with sites and a certificate as typed
// (IMAGE being the image loaded from a tarball; podman's storage in a directory of the test,
// so the machine's is untouched), on the test stack assembled on the stand-in base, with
// README.md's own tls.conf, and gets HTTPS back: the command people copy, not the smoke
// suite's own runc, under Debian 12's podman.
func TestReadmePodmanLine(t *testing.T) {
	testenv.Tool(t, "podman", "podman")
	testenv.Root(t)
	line := readmePodmanTLSLine(t)
	needPorts(t, "8080", "8443")
	dir := t.TempDir()
	tarball := filepath.Join(dir, "nginx.tar")
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	base, _ := basetest.For(t, basetest.Options{})
	img, err := image.Assemble(base, testenv.BuiltTree(t), l, image.WithBaseRef(basetest.Name))
	if err != nil {
		t.Fatal(err)
	}
	const ref = "localhost/nginx-forge-readme:test"
	if err := image.WriteOutput(tarball, img, ref, nil, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	runReadmePodmanLine(t, line, tarball, "podman load -i "+tarball)
}

// readmePodmanTLSLine is README.md's podman line with sites and a certificate.
func readmePodmanTLSLine(t *testing.T) string {
	t.Helper()
	for _, l := range readmeShellLines(t, "podman") {
		if strings.Contains(l, "/etc/nginx/tls") {
			return l
		}
	}
	t.Fatal("README.md and docs/ have no podman line mounting /etc/nginx/tls")
	return ""
}

// needPorts skips (fails under NGINX_FORGE_E2E=1) unless the README's published ports are free.
func needPorts(t *testing.T, ports ...string) {
	t.Helper()
	for _, port := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			testenv.Missing(t, "a free port "+port+" for the README's -p "+port+" ("+err.Error()+")", "stop what listens there")
		}
		ln.Close()
	}
}

// runReadmePodmanLine loads the image tarball with load (a `podman load -i FILE` command
// line, run with podman's storage in a directory of the test, so the machine's is
// untouched), runs line (a README podman line, IMAGE its placeholder) as typed with sites and
// a certificate in its working directory, and wants HTTPS back on 8443.
//
// Podman 4.3 gives a container default limits of its own and refuses to start one on a
// machine whose hard limits are below them (`error setting rlimit`, as README.md says): there
// it skips, naming podman's refusal.
func runReadmePodmanLine(t *testing.T, line, tarball, load string) {
	t.Helper()
	dir := t.TempDir()
	undoPodmanNetwork(t)
	// Podman refuses a run root of more than 50 characters: its storage goes under a short
	// directory of its own.
	store, err := os.MkdirTemp("", "podman-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(store) })
	podman := []string{"podman", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}
	podmanCmd := func(args ...string) *exec.Cmd { return exec.Command(podman[0], append(podman[1:], args...)...) }
	typedLoad := strings.Replace(load, "podman load", strings.Join(podman, " ")+" load", 1)
	out, err := exec.Command("bash", "-c", typedLoad).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", typedLoad, err, out)
	}
	m := regexp.MustCompile(`(?m)^Loaded image(?:\(s\))?: (\S+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s printed no loaded image name:\n%s", typedLoad, out)
	}
	ref := string(m[1])
	t.Cleanup(func() { podmanCmd("rm", "--all", "--force", "--time", "2").Run() })

	writeSitesAndTLS(t, dir)
	// As typed, with IMAGE the loaded image and podman's storage flags after "podman".
	typed := regexp.MustCompile(`\bIMAGE$`).ReplaceAllString(line, ref)
	typed = strings.Replace(typed, "podman run", strings.Join(podman, " ")+" run --name readme-line", 1)
	t.Logf("README line as run: %s", typed)

	start := func() (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command("bash", "-c", typed)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PWD="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			podmanCmd("stop", "--time", "2", "readme-line").Run()
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			cmd.Wait()
		})
		return cmd, &out
	}
	cmd, cmdOut := start()
	if err := waitOrExit(cmd, 3*time.Second); err != nil && strings.Contains(cmdOut.String(), "error setting rlimit") {
		// Not a missing install (.ci/install-deps cannot change a machine's hard limits): the
		// line as typed is refused here, so the README's own fix for such a machine is
		// applied, as README.md words it, and the line must then serve.
		const fix = "--ulimit nproc=4096:4096"
		if !strings.Contains(docFiles(t)[0].text, "or add `"+fix+"` to the line") {
			t.Fatalf("podman refused this machine's hard limits (%s), and README.md no longer gives the fix %q", strings.TrimSpace(cmdOut.String()), fix)
		}
		t.Logf("podman refused the line as typed on this machine (%s): again with the README's fix for such machines, %s", strings.TrimSpace(cmdOut.String()), fix)
		podmanCmd("rm", "--force", "readme-line").Run()
		typed = strings.Replace(typed, " run --name readme-line", " run --name readme-line "+fix, 1)
		cmd, cmdOut = start()
	}

	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(dir, "tls", "tls.crt"))
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		resp, err := client.Get("https://127.0.0.1:8443/healthz")
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok\n" || resp.TLS == nil {
				t.Fatalf("https://127.0.0.1:8443/healthz: %s %q", resp.Status, body)
			}
			t.Logf("HTTPS %s, %s", resp.Status, tls.VersionName(resp.TLS.Version))
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no HTTPS answer from the README's podman line in 60 s: %v\npodman's output:\n%s", err, cmdOut.String())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// writeSitesAndTLS makes dir/sites (empty: the image's own server) and dir/tls as README.md
// says, as typed: its mkdir and openssl lines (a self-signed certificate for localhost, its
// key 0600), its tls.conf written with no permission for others (a umask of 077), then its
// chmod line, without which nginx (uid 65532) could read neither.
func writeSitesAndTLS(t *testing.T, dir string) {
	t.Helper()
	readme := docFiles(t)[0].text
	// step runs README.md's one shell line that starts with program and names tls.
	step := func(program string) {
		var lines []string
		for _, l := range shellLines(readme, program) {
			if strings.Contains(l, "tls") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 {
			t.Fatalf("README.md has %d %s lines naming tls in its shell blocks, want the one of Run it: %q", len(lines), program, lines)
		}
		cmd := exec.Command("bash", "-euc", lines[0])
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("README.md's `%s`: %v\n%s", lines[0], err, out)
		}
	}
	step("mkdir")
	step("openssl")
	from := strings.Index(readme, "  ```nginx\n")
	to := strings.Index(readme[from+1:], "  ```\n")
	if from < 0 || to < 0 {
		t.Fatal("README.md shows no tls.conf block")
	}
	var conf strings.Builder
	for _, l := range strings.Split(readme[from+len("  ```nginx\n"):from+1+to], "\n") {
		conf.WriteString(strings.TrimPrefix(l, "  ") + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "tls", "tls.conf"), []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	step("chmod")
}

// waitOrExit waits up to d for cmd to exit early (a refused start) and returns its error;
// nil when it is still running.
func waitOrExit(cmd *exec.Cmd, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
			return err
		}
		var ws syscall.WaitStatus
		if pid, _ := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WNOHANG, nil); pid == cmd.Process.Pid {
			return fmt.Errorf("exited: %d", ws.ExitStatus())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// undoPodmanNetwork leaves the machine's network as the test found it: rootful podman's
// network backend (netavark) adds its firewall chains, turns on IPv4 forwarding and keeps
// state under /run/containers, and leaves them all when its container is gone. What existed
// before the test is kept; only what podman added is removed, at the end of the test.
func undoPodmanNetwork(t *testing.T) {
	t.Helper()
	chains := map[string][]string{ // table: podman's chains, and the rules that jump to them
		"filter": {"NETAVARK_FORWARD"},
		"nat":    {"NETAVARK-HOSTPORT-DNAT", "NETAVARK-HOSTPORT-MASQ", "NETAVARK-HOSTPORT-SETMARK"},
	}
	had := func(table, chain string) bool {
		return exec.Command("iptables", "-t", table, "-S", chain).Run() == nil
	}
	before := map[string]bool{}
	for table, cs := range chains {
		for _, c := range cs {
			before[table+"/"+c] = had(table, c)
		}
	}
	const forward = "/proc/sys/net/ipv4/ip_forward"
	fwd, _ := os.ReadFile(forward)
	_, runErr := os.Stat("/run/containers")
	t.Cleanup(func() {
		for table, cs := range chains {
			for _, c := range cs {
				if before[table+"/"+c] || !had(table, c) {
					continue
				}
				// Every rule of the table that jumps to the chain, then the chain itself.
				out, _ := exec.Command("iptables", "-t", table, "-S").Output()
				for _, rule := range strings.Split(string(out), "\n") {
					if strings.HasPrefix(rule, "-A ") && strings.HasSuffix(rule, "-j "+c) {
						args := append([]string{"-t", table, "-D"}, shellFields(strings.TrimPrefix(rule, "-A "))...)
						exec.Command("iptables", args...).Run()
					}
				}
				exec.Command("iptables", "-t", table, "-F", c).Run()
				exec.Command("iptables", "-t", table, "-X", c).Run()
			}
		}
		if len(fwd) > 0 {
			if now, _ := os.ReadFile(forward); string(now) != string(fwd) {
				os.WriteFile(forward, fwd, 0o644)
			}
		}
		if os.IsNotExist(runErr) {
			os.RemoveAll("/run/containers")
		}
	})
}

// shellFields splits an iptables -S rule into its arguments, keeping a double-quoted
// comment as one.
func shellFields(rule string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range rule {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
