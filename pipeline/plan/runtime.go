package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// RuntimeConfig is the runtime contract of the image the install tree goes into: who runs
// it, how it starts and stops, what it listens on, and which directories it writes.
type RuntimeConfig struct {
	// User is uid:gid, distroless's "nonroot".
	User string
	// Entrypoint starts nginx in the foreground. `daemon off;` lives here and not in
	// nginx.conf: both at once is a fatal duplicate.
	Entrypoint []string
	// StopSignal is SIGQUIT: nginx's graceful shutdown (finish requests, then exit).
	StopSignal string
	// Ports are port/protocol pairs: HTTPPort, HTTPSPort (h2), and HTTPSPort on udp (h3).
	Ports []string
	// HTTPPort serves plain HTTP (and /healthz); HTTPSPort serves TLS once TLSDir is mounted.
	HTTPPort, HTTPSPort int
	// Binary is nginx's path in the image.
	Binary string
	// ConfDir is where users mount their server blocks (*.conf).
	ConfDir string
	// WritableDirs (relative to /) are where nginx writes (temp files, pid); they are owned
	// by User and are the tmpfs mounts of a read-only-root run.
	WritableDirs []string
	// TLSDir is where users mount tls.crt, tls.key and tls.conf to turn on 8443 (see
	// files/nginx.conf).
	TLSDir string
	// WorkingDir is the process's working directory. nginx resolves relative paths
	// against its prefix, never the working directory, so the image says "/" rather than
	// inheriting the base's (distroless: /home/nonroot), which a different base may lack.
	WorkingDir string
}

// UID is the numeric user id of User: the owner of WritableDirs in the image's layer and
// of the tmpfs mounts of a read-only-root run.
func (r RuntimeConfig) UID() int { uid, _ := r.ids(); return uid }

// GID is the numeric group id of User.
func (r RuntimeConfig) GID() int { _, gid := r.ids(); return gid }

// ids parses User. It must be numeric uid:gid: a name would be resolved through the
// image's /etc/passwd, which image assembly cannot see when it chowns the layer, and
// Kubernetes' runAsNonRoot refuses a non-numeric user it cannot prove is not root. The
// values are this package's own, so a bad one is a programming error.
func (r RuntimeConfig) ids() (int, int) {
	u, g, ok := strings.Cut(r.User, ":")
	uid, errU := strconv.Atoi(u)
	gid, errG := strconv.Atoi(g)
	if !ok || errU != nil || errG != nil || uid < 0 || gid < 0 {
		panic(fmt.Sprintf("plan.Runtime: User %q is not numeric uid:gid (like 65532:65532)", r.User))
	}
	return uid, gid
}

// scratchDir is the conventional scratch directory (sticky, world-writable). nginx itself
// never writes there (its temp paths are under var/cache/nginx), but a read-only root
// leaves the base's /tmp unwritable, and the README's `docker run` line mounts a tmpfs
// on it for any other program run in the container that expects a writable /tmp.
const scratchDir = "/tmp"

// Tmpfs lists the absolute paths a read-only-root run mounts a fresh tmpfs on: each of
// WritableDirs, then scratchDir. Both engines mount exactly these when they run the image
// (the host engine through pipeline/ocirun's WithTmpfs), and the README's `docker run --read-only --tmpfs ...` line names the same three.
func (r RuntimeConfig) Tmpfs() []string {
	out := make([]string, 0, len(r.WritableDirs)+1)
	for _, d := range r.WritableDirs {
		out = append(out, "/"+d)
	}
	return append(out, scratchDir)
}

// Port is one exposed port.
type Port struct {
	Number   int
	Protocol string // "tcp" or "udp"
}

// PortList returns Ports parsed; the values are this package's own, so they always parse.
func (r RuntimeConfig) PortList() []Port {
	var out []Port
	for _, p := range r.Ports {
		num, proto, _ := strings.Cut(p, "/")
		n, err := strconv.Atoi(num)
		if err != nil {
			panic(fmt.Sprintf("plan.Runtime: bad port %q", p))
		}
		out = append(out, Port{Number: n, Protocol: proto})
	}
	return out
}

// Runtime is the image's runtime contract, defined here once: the rendered Dockerfile's
// final stage is made from it, pipeline/image writes it into the assembled image's config
// and layer, the engines mount its Tmpfs when they run the image, and the smoke checks
// expect it.
var Runtime = RuntimeConfig{
	User:         "65532:65532",
	Entrypoint:   []string{"/usr/sbin/nginx", "-g", "daemon off;"},
	StopSignal:   "SIGQUIT",
	Ports:        []string{"8080/tcp", "8443/tcp", "8443/udp"},
	HTTPPort:     8080,
	HTTPSPort:    8443,
	Binary:       "/usr/sbin/nginx",
	ConfDir:      "/etc/nginx/conf.d",
	WritableDirs: []string{"var/cache/nginx", "run/nginx"},
	TLSDir:       "/etc/nginx/tls",
	WorkingDir:   "/",
}
