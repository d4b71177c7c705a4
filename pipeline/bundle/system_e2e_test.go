//go:build integration

package bundle

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// These tests have systemd's tools, Debian's nginx and a network namespace (root) check
// the bundle: the integration tier.

// TestSystemdAcceptsUnit has systemd's own tools check the unit: `systemd-analyze verify`
// (every directive parses, the binary exists; it exits 0 on unknown keys, so any output is a
// failure), the offline security score, and systemd-sysusers creating the user in a scratch root.
func TestSystemdAcceptsUnit(t *testing.T) {
	analyze := testenv.Tool(t, "systemd-analyze", "systemd")
	nginx := testenv.Tool(t, "nginx", "nginx")
	root := t.TempDir()
	conf := filepath.Join(root, "nginx.conf")
	if err := os.WriteFile(conf, []byte(sampleConf), 0o644); err != nil {
		t.Fatal(err)
	}
	paths, err := Write(root, []byte(sampleConf), withPaths(nginx, conf))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("Write wrote %v", paths)
	}
	unit := filepath.Join(root, unitPath("nginx-forge"))

	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
	}
	// The check above must be able to fail: a misspelt directive is reported.
	bad := filepath.Join(t.TempDir(), "bad.service")
	b, _ := os.ReadFile(unit)
	if err := os.WriteFile(bad, bytes.Replace(b, []byte("ProtectSystem=strict"), []byte("ProtectSystem=strikt"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command(analyze, "verify", bad).CombinedOutput(); !bytes.Contains(out, []byte("strikt")) {
		t.Errorf("systemd-analyze verify did not report a bad value: %s", out)
	}

	// Exposure 0 (locked down) .. 10 (unprotected); --threshold is in tenths. Debian's own
	// nginx.service scores 9.6; this one must stay below 2.5.
	out, err = exec.Command(analyze, "security", "--offline=true", "--threshold=25", unit).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.5 (%v):\n%s", err, tail(out, 6))
	} else {
		t.Logf("%s", tail(out, 1))
	}

	sysusers, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		t.Logf("systemd-sysusers not installed; the sysusers.d entry is checked by the golden file only")
		return
	}
	scratch := t.TempDir()
	if err := os.MkdirAll(filepath.Join(scratch, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sysusers, "--root="+scratch, filepath.Join(root, sysusersPath("nginx-forge"))).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, _ := os.ReadFile(filepath.Join(scratch, "etc", "passwd"))
	if !bytes.Contains(passwd, []byte("nginx-forge:x:")) || !bytes.Contains(passwd, []byte(":/usr/sbin/nologin")) {
		t.Errorf("systemd-sysusers did not create a nologin user:\n%s", passwd)
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestExecLinesRunNginx runs the unit's ExecStartPre command line, split the way systemd splits
// it (single quotes group), with the real nginx on a real config: the quoting of
// -g 'daemon off;' must reach nginx as one argument.
func TestExecLinesRunNginx(t *testing.T) {
	nginx := testenv.Tool(t, "nginx", "nginx")
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	// Self-contained: pid and logs in the scratch directory, a port nobody binds (-t does not).
	c := fmt.Sprintf("pid %[1]s/nginx.pid;\nerror_log %[1]s/error.log;\nworker_rlimit_nofile 4096;\nevents {}\nhttp { access_log off; client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy; fastcgi_temp_path %[1]s/fastcgi; uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi; server { listen 127.0.0.1:1; } }\n", dir)
	if err := os.WriteFile(conf, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	unit, err := renderUnit([]byte(c), makeOptions([]Option{withPaths(nginx, conf)}))
	if err != nil {
		t.Fatal(err)
	}
	var pre string
	for _, l := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStartPre="); ok {
			pre = v
		}
	}
	args, err := splitSystemd(pre)
	if err != nil {
		t.Fatal(err)
	}
	if len(args) < 2 || args[len(args)-1] != "daemon off;" {
		t.Fatalf("ExecStartPre splits into %q", args)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Errorf("%q: %v\n%s", args, err, out)
	}
	// And a broken config fails it, as the unit relies on.
	if err := os.WriteFile(conf, []byte(c+"bogus_directive on;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err == nil {
		t.Errorf("the config test passed a broken config: %s", out)
	}
}

// splitSystemd splits a command line like systemd does for the quoting this unit uses.
func splitSystemd(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			in = !in
			quoted = true
		case r == ' ' && !in:
			if cur.Len() > 0 || quoted {
				args = append(args, cur.String())
			}
			cur.Reset()
			quoted = false
		default:
			cur.WriteRune(r)
		}
	}
	if in {
		return nil, fmt.Errorf("unbalanced quote in %q", s)
	}
	if cur.Len() > 0 || quoted {
		args = append(args, cur.String())
	}
	return args, nil
}

// TestSysctlKeysExist checks every key against this kernel: the file exists under /proc/sys,
// and the values the kernel keeps per network namespace are accepted by a fresh namespace
// (the host's settings are not touched).
func TestSysctlKeysExist(t *testing.T) {
	conf := string(sysctlConf())
	seen := 0
	for _, line := range strings.Split(conf, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			t.Errorf("line %q is not 'key = value'", line)
			continue
		}
		if _, err := strconv.Atoi(v); err != nil {
			t.Errorf("%s: value %q is not a number", k, v)
		}
		p := filepath.Join("/proc/sys", strings.ReplaceAll(k, ".", "/"))
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: this kernel has no %s", k, p)
		}
		seen++
	}
	if seen != len(sysctls) {
		t.Errorf("the file sets %d keys, sysctls has %d", seen, len(sysctls))
	}

	testenv.Root(t)
	unshare := testenv.Tool(t, "unshare", "util-linux")
	var script strings.Builder
	for _, s := range sysctls {
		p := filepath.Join("/proc/sys", strings.ReplaceAll(s.Key, ".", "/"))
		// Global keys (netdev_max_backlog) do not exist in a new namespace.
		fmt.Fprintf(&script, "if [ -e %[1]s ]; then echo %[2]d > %[1]s && echo \"%[3]s=$(cat %[1]s)\"; fi\n", p, s.Value, s.Key)
	}
	out, err := exec.Command(unshare, "--net", "sh", "-ec", script.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("applying the per-namespace settings in a new network namespace: %v\n%s", err, out)
	}
	applied := 0
	for _, s := range sysctls {
		if bytes.Contains(out, []byte(fmt.Sprintf("%s=%d\n", s.Key, s.Value))) {
			applied++
		}
	}
	if applied < 3 {
		t.Errorf("only %d settings applied in a new network namespace:\n%s", applied, out)
	}
}
