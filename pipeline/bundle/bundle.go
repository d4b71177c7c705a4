// Package bundle writes what a bare-metal install of the built nginx needs besides the
// install tree: a hardened systemd unit, the sysusers.d entry for its dedicated user, and a
// sysctl.d file for a busy server's connection queues. It is the first source document's
// "system integration" section done carefully: foreground process under systemd (no PID file
// race), a config test before every start, no root at run time, and every kernel setting
// commented with when it matters and when it does not.
package bundle

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// options describe the installed layout.
type options struct {
	// name is the unit and user name.
	name string
	// binary and config are the absolute paths of nginx and its nginx.conf on the target.
	binary, config string
}

// Option changes the installed layout from the runtime contract's (the install tree copied
// onto /). The program writes that layout; the package's tests move the binary and config
// into their own tree, where systemd-analyze verifies the unit against a real nginx.
type Option func(*options)

// withName sets the unit and user name (default "nginx-forge").
func withName(n string) Option { return func(o *options) { o.name = n } }

// withPaths sets the absolute paths of nginx and its nginx.conf on the target (default
// /usr/sbin/nginx and /etc/nginx/nginx.conf).
func withPaths(binary, config string) Option {
	return func(o *options) { o.binary, o.config = binary, config }
}

// makeOptions is the one place the defaults are applied.
func makeOptions(opts []Option) options {
	o := options{name: "nginx-forge", binary: "/usr/sbin/nginx", config: "/etc/nginx/nginx.conf"}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// The writable directories of the runtime contract, relative to /run, /var/cache and /var/log.
const (
	runtimeDir = "nginx" // /run/nginx: nginx.pid
	cacheDir   = "nginx" // /var/cache/nginx: client_body, proxy, fastcgi, uwsgi, scgi temp paths
	logsDir    = "nginx" // /var/log/nginx: access.log and error.log (see the unit)
)

var nameRE = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,30}$`)

var directiveRE = regexp.MustCompile(`(?m)^\s*(worker_rlimit_nofile|worker_connections|worker_processes)\s+([^;#\s]+)\s*;`)

// nofileLimit is the LimitNOFILE the unit sets: the config's worker_rlimit_nofile, because an
// unprivileged master cannot raise a worker's limit above the hard limit systemd gives it.
// Without worker_rlimit_nofile, nginx keeps the inherited limit, and each connection needs
// up to two descriptors (client and upstream), so the unit gives 2 x worker_connections,
// at least 1024 (the kernel's default soft limit).
func nofileLimit(conf []byte) (int, error) {
	vals := map[string]string{}
	for _, m := range directiveRE.FindAllSubmatch(conf, -1) {
		vals[string(m[1])] = string(m[2])
	}
	if v, ok := vals["worker_rlimit_nofile"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("nginx.conf: worker_rlimit_nofile %q is not a positive number", v)
		}
		return n, nil
	}
	wc := 512 // nginx's default worker_connections
	if v, ok := vals["worker_connections"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("nginx.conf: worker_connections %q is not a positive number", v)
		}
		wc = n
	}
	return max(2*wc, 1024), nil
}

var unitTemplate = template.Must(template.New("unit").Parse(`# {{.Name}}.service: nginx built by nginx-forge, hardened. Generated; edit the generator
# (pipeline/bundle) or override with "systemctl edit {{.Name}}".
[Unit]
Description=nginx web server (nginx-forge build)
Documentation=man:systemd.exec(5) https://nginx.org/en/docs/
After=network-online.target nss-lookup.target
Wants=network-online.target

[Service]
# nginx stays in the foreground (-g 'daemon off;', as in the image's entrypoint; the config
# must not say it too): systemd tracks the master itself, with no PID file to race on.
Type=exec
User={{.Name}}
Group={{.Name}}
# A broken config fails the start with nginx's own message instead of a dead server.
ExecStartPre={{.Binary}} -t -q -c {{.Config}} -g 'daemon off;'
ExecStart={{.Binary}} -c {{.Config}} -g 'daemon off;'
# HUP: re-read the config and replace workers gracefully (nginx keeps the old ones if the new
# config is invalid).
ExecReload=/bin/kill -HUP $MAINPID
# QUIT: graceful stop (finish in-flight requests); after TimeoutStopSec the rest are killed.
KillSignal=SIGQUIT
KillMode=mixed
TimeoutStopSec=30s
Restart=on-failure
RestartSec=3s

# The runtime contract's writable paths, created and owned by the service user.
RuntimeDirectory={{.RuntimeDir}}
CacheDirectory={{.CacheDir}}
LogsDirectory={{.LogsDir}}
# The config logs to /dev/stdout and /dev/stderr (right for a container). Under systemd those
# are journald sockets, and open("/dev/stdout") on a socket fails with ENXIO, so nginx would
# refuse to start: give it files instead. Rotate with copytruncate (reopening /dev/stdout
# reopens the same file).
StandardOutput=append:/var/log/{{.LogsDir}}/access.log
StandardError=append:/var/log/{{.LogsDir}}/error.log

# Matches worker_rlimit_nofile: an unprivileged master cannot raise it past this hard limit.
LimitNOFILE={{.Nofile}}

# No root at any point. CAP_NET_BIND_SERVICE only lets it bind ports below 1024 (80/443 in a
# conf.d server block); the shipped ports 8080/8443 do not need it.
AmbientCapabilities=CAP_NET_BIND_SERVICE
CapabilityBoundingSet=CAP_NET_BIND_SERVICE
NoNewPrivileges=yes

# Read-only system except the directories above.
ProtectSystem=strict
ReadWritePaths=/var/cache/{{.CacheDir}} /run/{{.RuntimeDir}} /var/log/{{.LogsDir}}
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
UMask=0027
SystemCallArchitectures=native
# @system-service keeps setrlimit (worker_rlimit_nofile), sched_setaffinity
# (worker_cpu_affinity), sendfile and io_submit (aio); anything else fails with EPERM.
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
# Not MemoryDenyWriteExecute: PCRE2's JIT (pcre_jit on) needs writable+executable pages.

[Install]
WantedBy=multi-user.target
`))

// renderUnit renders the systemd unit that runs nginxConf (LimitNOFILE is taken from its
// worker_rlimit_nofile, see nofileLimit).
func renderUnit(nginxConf []byte, o options) ([]byte, error) {
	if !nameRE.MatchString(o.name) {
		return nil, fmt.Errorf("bundle: name %q is not a valid user and unit name (lower case letters, digits, - and _)", o.name)
	}
	for _, p := range []struct{ flag, v string }{{"binary", o.binary}, {"config", o.config}} {
		if !filepath.IsAbs(p.v) || strings.ContainsAny(p.v, " '\"\\%$") {
			return nil, fmt.Errorf("bundle: %s path %q must be absolute, without spaces, quotes, %% or $", p.flag, p.v)
		}
	}
	nofile, err := nofileLimit(nginxConf)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	var b bytes.Buffer
	err = unitTemplate.Execute(&b, map[string]any{
		"Name": o.name, "Binary": o.binary, "Config": o.config, "Nofile": nofile,
		"RuntimeDir": runtimeDir, "CacheDir": cacheDir, "LogsDir": logsDir,
	})
	if err != nil {
		return nil, fmt.Errorf("bundle: rendering the unit: %w", err)
	}
	return b.Bytes(), nil
}

// sysusersEntry is the sysusers.d entry that creates the service's system user and group
// (systemd-sysusers runs it at boot and on package install; run it by hand after copying).
func sysusersEntry(o options) []byte {
	return []byte(fmt.Sprintf("# The %[1]s service's own user: no login shell, no home.\nu %[1]s - \"nginx-forge web server\" /nonexistent /usr/sbin/nologin\n", o.name))
}

// setting is one kernel parameter of the sysctl file.
type setting struct {
	Key   string
	Value int
	Why   string
}

// sysctls are the kernel settings, each with why. They raise queue limits, so they cost only
// memory under load; fs.file-max is not among them: on 64-bit kernels its default is already
// in the millions, and what limits nginx is the per-process LimitNOFILE in the unit.
var sysctls = []setting{
	{"net.core.somaxconn", 65535, `Upper bound of a listening socket's accept queue (kernel default 4096 since Linux 5.4,
128 before). nginx asks for 511 on Linux unless a listen directive says backlog=N, and the
kernel uses the smaller of the two: raise both ("listen 443 ssl backlog=65535;") for bursts of
new connections, or this setting alone changes nothing.`},
	{"net.ipv4.tcp_max_syn_backlog", 65535, `Half-open connections (SYN received, handshake not finished) kept per listener. With
syncookies on (the default) a full queue still accepts connections, but without TCP options
such as window scaling; a larger queue keeps them for legitimate bursts.`},
	{"net.ipv4.tcp_fastopen", 3, `TCP Fast Open: 1 = as a client, 2 = as a server, 3 = both. A returning client may send
its request in the SYN and save a round trip. It takes effect only on listeners with
"listen ... fastopen=N" in nginx, and only for clients that ask for it; some middleboxes drop
such SYNs, which clients detect and stop using it.`},
	{"net.core.netdev_max_backlog", 16384, `Packets a CPU queues from the network card before the stack processes them (default
1000). At high packet rates a full queue drops packets (second column of
/proc/net/softnet_stat); raising it trades memory for fewer drops. Global, not per network
namespace.`},
}

// sysctlConf renders the sysctl.d file.
func sysctlConf() []byte {
	var b bytes.Buffer
	b.WriteString("# Kernel settings for a busy nginx (nginx-forge). Applied at boot by systemd-sysctl;\n# apply now with: sysctl --system\n")
	for _, s := range sysctls {
		b.WriteString("\n")
		sc := bufio.NewScanner(strings.NewReader(s.Why))
		for sc.Scan() {
			b.WriteString("# " + sc.Text() + "\n")
		}
		fmt.Fprintf(&b, "%s = %d\n", s.Key, s.Value)
	}
	return b.Bytes()
}

// Paths of the bundle's files, relative to the root Write fills.
func unitPath(name string) string     { return filepath.Join("etc", "systemd", "system", name+".service") }
func sysusersPath(name string) string { return filepath.Join("usr", "lib", "sysusers.d", name+".conf") }
func sysctlPath(name string) string   { return filepath.Join("etc", "sysctl.d", "60-"+name+".conf") }

// Write writes the unit, the sysusers.d entry and the sysctl.d file under root at their
// system paths (root/etc/systemd/system/..., root/usr/lib/sysusers.d/..., root/etc/sysctl.d/...),
// so that copying root onto / installs them. The unit runs nginxConf, the content of the
// config at the layout's config path. It returns the paths written.
func Write(root string, nginxConf []byte, opts ...Option) ([]string, error) {
	o := makeOptions(opts)
	unit, err := renderUnit(nginxConf, o)
	if err != nil {
		return nil, err
	}
	files := []struct {
		rel  string
		data []byte
	}{
		{unitPath(o.name), unit},
		{sysusersPath(o.name), sysusersEntry(o)},
		{sysctlPath(o.name), sysctlConf()},
	}
	var written []string
	for _, f := range files {
		p := filepath.Join(root, f.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, fmt.Errorf("bundle: %w", err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return written, fmt.Errorf("bundle: writing %s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}
