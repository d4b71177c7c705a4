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
	// Ports are port/protocol pairs: 8080 http, 8443 https with h2, and h3 (QUIC) on udp.
	Ports []string
	// WritableDirs (relative to /) are where nginx writes (temp files, pid); they are owned
	// by User and are the tmpfs mounts of a read-only-root run.
	WritableDirs []string
	// TLSDir is where users mount tls.crt, tls.key and tls.conf to turn on 8443 (see
	// files/nginx.conf).
	TLSDir string
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

// Runtime is the image's runtime contract. The rendered Dockerfile's final stage is made
// from it; the image pipeline/image assembles must carry the same configuration.
var Runtime = RuntimeConfig{
	User:         "65532:65532",
	Entrypoint:   []string{"/usr/sbin/nginx", "-g", "daemon off;"},
	StopSignal:   "SIGQUIT",
	Ports:        []string{"8080/tcp", "8443/tcp", "8443/udp"},
	WritableDirs: []string{"var/cache/nginx", "run/nginx"},
	TLSDir:       "/etc/nginx/tls",
}
