package plan

import (
	"bufio"
	"path"
	"slices"
	"strings"
	"testing"
)

// The numeric ids are what image assembly chowns the writable directories to and what
// ocirun owns the tmpfs mounts by; they must be distroless's nonroot, 65532.
func TestRuntimeIDs(t *testing.T) {
	if uid, gid := Runtime.UID(), Runtime.GID(); uid != 65532 || gid != 65532 {
		t.Errorf("Runtime.UID(), GID() = %d, %d; want 65532, 65532 (distroless's nonroot)", uid, gid)
	}
	for _, bad := range []string{"nonroot", "65532", "65532:", "a:b", "-1:0", ""} {
		func() {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, `"`+bad+`"`) || !strings.Contains(msg, "numeric uid:gid") {
					t.Errorf("User %q: panic %v, want one naming the value and the numeric uid:gid form", bad, r)
				}
			}()
			RuntimeConfig{User: bad}.UID()
		}()
	}
}

// The tmpfs list is the README's `docker run --read-only --tmpfs ...` line.
func TestRuntimeTmpfs(t *testing.T) {
	want := []string{"/var/cache/nginx", "/run/nginx", "/tmp"}
	if got := Runtime.Tmpfs(); !slices.Equal(got, want) {
		t.Errorf("Runtime.Tmpfs() = %q, want %q", got, want)
	}
	// A copy each time: a caller appending to it must not change the contract.
	a := Runtime.Tmpfs()
	a[0] = "/elsewhere"
	if Runtime.Tmpfs()[0] != "/var/cache/nginx" {
		t.Error("Tmpfs returned shared storage")
	}
}

// Every place the shipped nginx.conf writes to (pid file, temp paths) lies in one of
// Runtime.WritableDirs, or nginx fails on a read-only root; logs go to the container's
// streams; the TLS directory is the one the contract names; `daemon off;` is not in the
// file, because the entrypoint says it (both at once is a fatal duplicate).
func TestShippedConfigHonoursRuntime(t *testing.T) {
	raw, err := shipped.ReadFile("files/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(Runtime.Entrypoint, "daemon off;") {
		t.Fatalf("Runtime.Entrypoint %q no longer says daemon off; revisit this test", Runtime.Entrypoint)
	}
	writes, includesTLS := 0, false
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ";"))
		if len(f) < 2 {
			continue
		}
		switch dir := f[0]; {
		case dir == "pid" || strings.HasSuffix(dir, "_temp_path"):
			writes++
			if !underWritable(f[1]) {
				t.Errorf("nginx.conf: %s %s is not under any of Runtime.WritableDirs %q: nginx cannot write it on a read-only root", dir, f[1], Runtime.WritableDirs)
			}
		case dir == "access_log" || dir == "error_log":
			if p := f[1]; p != "off" && p != "stderr" && p != "/dev/stdout" && p != "/dev/stderr" {
				t.Errorf("nginx.conf: %s %s writes a file; logs go to the container's stdout/stderr", dir, p)
			}
		case dir == "include" && f[1] == path.Join(Runtime.TLSDir, "*.conf"):
			includesTLS = true
		case dir == "daemon":
			t.Errorf("nginx.conf says daemon %s; the entrypoint already does (a fatal duplicate)", f[1])
		}
	}
	if writes < 2 {
		t.Errorf("found %d pid/temp_path directives in nginx.conf; the parser missed them", writes)
	}
	if !includesTLS {
		t.Errorf("nginx.conf does not include %s/*.conf (Runtime.TLSDir)", Runtime.TLSDir)
	}
}

func underWritable(p string) bool {
	for _, d := range Runtime.WritableDirs {
		if strings.HasPrefix(p, "/"+d+"/") || p == "/"+d {
			return true
		}
	}
	return false
}

// TestRuntimePortsAgree: the ports the smoke suite dials are the ones the image exposes.
func TestRuntimePortsAgree(t *testing.T) {
	have := map[Port]bool{}
	for _, p := range Runtime.PortList() {
		have[p] = true
	}
	for _, want := range []Port{{Runtime.HTTPPort, "tcp"}, {Runtime.HTTPSPort, "tcp"}, {Runtime.HTTPSPort, "udp"}} {
		if !have[want] {
			t.Errorf("Runtime.Ports %q lacks %d/%s", Runtime.Ports, want.Number, want.Protocol)
		}
	}
	if !strings.HasPrefix(Runtime.Binary, "/") || Runtime.Entrypoint[0] != Runtime.Binary {
		t.Errorf("Binary %q is not the entrypoint's %q", Runtime.Binary, Runtime.Entrypoint[0])
	}
}
