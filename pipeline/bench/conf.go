package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/template"
)

// Knobs are the performance settings of nginx.conf that the tuning sweep varies. Every server
// under test gets a config rendered from the same template; only the Knobs (and, per server,
// its prefix and ports) differ, so a difference in the results is the knob's or the binary's.
type Knobs struct {
	// WorkerProcesses is "auto" or a number. The benchmark resolves "auto" to the number of
	// CPUs the server is pinned to, because nginx 1.22 counts all online CPUs, newer ones may
	// count the affinity mask, and two binaries must not get different worker counts from
	// the same config.
	WorkerProcesses string `json:"worker_processes"`
	// WorkerConnections is events { worker_connections }.
	WorkerConnections int `json:"worker_connections"`
	// WorkerRlimitNofile is worker_rlimit_nofile; 0 leaves the inherited limit.
	WorkerRlimitNofile int `json:"worker_rlimit_nofile,omitempty"`
	// OpenFileCache is the open_file_cache argument ("max=1024 inactive=10s"); "" means off.
	OpenFileCache string `json:"open_file_cache,omitempty"`
	// OpenFileCacheValid is open_file_cache_valid (only rendered with OpenFileCache).
	OpenFileCacheValid string `json:"open_file_cache_valid,omitempty"`
	// KeepaliveRequests is keepalive_requests: after this many requests nginx closes a
	// keep-alive connection, and a TLS client pays a new handshake.
	KeepaliveRequests int `json:"keepalive_requests"`
	// KeepaliveTimeout is keepalive_timeout, e.g. "65s".
	KeepaliveTimeout string `json:"keepalive_timeout"`
	// SSLSessionCache is the ssl_session_cache argument ("shared:SSL:10m", "none", "off").
	SSLSessionCache string `json:"ssl_session_cache"`
	// SSLSessionTickets is ssl_session_tickets.
	SSLSessionTickets bool `json:"ssl_session_tickets"`
	// Sendfile is sendfile; TCPNopush is tcp_nopush (only effective with sendfile).
	Sendfile  bool `json:"sendfile"`
	TCPNopush bool `json:"tcp_nopush"`
	// GzipCompLevel is gzip_comp_level for the gzip scenario's location.
	GzipCompLevel int `json:"gzip_comp_level"`
}

// DefaultKnobs are nginx's own defaults (what a config that sets nothing gets), except
// sendfile, which Debian's and the shipped config turn on.
func DefaultKnobs() Knobs {
	return Knobs{
		WorkerProcesses:   "auto",
		WorkerConnections: 1024,
		KeepaliveRequests: 1000,
		KeepaliveTimeout:  "75s",
		SSLSessionCache:   "none",
		SSLSessionTickets: true,
		Sendfile:          true,
		GzipCompLevel:     1,
	}
}

// ParseKnobs reads the knob values an nginx.conf sets (the shipped config, for the tuning
// sweep's baseline), starting from DefaultKnobs for what it does not set. It understands the
// plain `name args;` form these directives take; a value it cannot read is an error naming
// the directive and the line, not a silently wrong baseline.
func ParseKnobs(r io.Reader) (Knobs, error) {
	k := DefaultKnobs()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		for _, stmt := range strings.Split(text, ";") {
			stmt = strings.TrimSpace(stmt)
			// A statement may follow a block opener on the same line: "events { worker_connections 1;"
			if i := strings.LastIndexAny(stmt, "{}"); i >= 0 {
				stmt = strings.TrimSpace(stmt[i+1:])
			}
			f := strings.Fields(stmt)
			if len(f) < 2 {
				continue
			}
			name, args := f[0], f[1:]
			if err := k.set(name, args); err != nil {
				return Knobs{}, fmt.Errorf("nginx.conf line %d: %s: %w", line, name, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Knobs{}, fmt.Errorf("reading nginx.conf: %w", err)
	}
	return k, nil
}

func (k *Knobs) set(name string, args []string) error {
	atoi := func() (int, error) {
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("want a non-negative number, got %q", args[0])
		}
		return n, nil
	}
	onoff := func() (bool, error) {
		switch args[0] {
		case "on":
			return true, nil
		case "off":
			return false, nil
		}
		return false, fmt.Errorf("want on or off, got %q", args[0])
	}
	var err error
	switch name {
	case "worker_processes":
		if args[0] != "auto" {
			_, err = atoi()
		}
		k.WorkerProcesses = args[0]
	case "worker_connections":
		k.WorkerConnections, err = atoi()
	case "worker_rlimit_nofile":
		k.WorkerRlimitNofile, err = atoi()
	case "open_file_cache":
		if args[0] == "off" {
			k.OpenFileCache = ""
		} else {
			k.OpenFileCache = strings.Join(args, " ")
		}
	case "open_file_cache_valid":
		k.OpenFileCacheValid = args[0]
	case "keepalive_requests":
		k.KeepaliveRequests, err = atoi()
	case "keepalive_timeout":
		k.KeepaliveTimeout = strings.Join(args, " ")
	case "ssl_session_cache":
		k.SSLSessionCache = strings.Join(args, " ")
	case "ssl_session_tickets":
		k.SSLSessionTickets, err = onoff()
	case "sendfile":
		k.Sendfile, err = onoff()
	case "tcp_nopush":
		k.TCPNopush, err = onoff()
	case "gzip_comp_level":
		k.GzipCompLevel, err = atoi()
	}
	return err
}

// Validate reports a knob value nginx would reject, naming the knob.
func (k Knobs) Validate() error {
	if k.WorkerProcesses != "auto" {
		if n, err := strconv.Atoi(k.WorkerProcesses); err != nil || n < 1 {
			return fmt.Errorf("worker_processes %q: want auto or a positive number", k.WorkerProcesses)
		}
	}
	if k.WorkerConnections < 2 {
		return fmt.Errorf("worker_connections %d: want at least 2", k.WorkerConnections)
	}
	if k.KeepaliveRequests < 1 {
		return fmt.Errorf("keepalive_requests %d: want at least 1", k.KeepaliveRequests)
	}
	if k.GzipCompLevel < 1 || k.GzipCompLevel > 9 {
		return fmt.Errorf("gzip_comp_level %d: want 1..9", k.GzipCompLevel)
	}
	if k.SSLSessionCache == "" || k.KeepaliveTimeout == "" {
		return fmt.Errorf("ssl_session_cache and keepalive_timeout must be set (use DefaultKnobs)")
	}
	return nil
}

// Config is everything one server's nginx.conf is rendered from.
type Config struct {
	Knobs
	// Prefix is the server's own directory (-p): pid, logs and temp paths live under it, so
	// a binary's compiled-in absolute paths (/var/cache/nginx, /run/nginx) are never used.
	Prefix string
	// Content is the directory with html/ and tls/, shared by all servers under test.
	Content string
	// HTTPPort and HTTPSPort are loopback ports. FullHandshakePort (optional) serves the same
	// content over TLS with session resumption disabled (ssl_session_cache off, tickets
	// off), so every connection costs a full handshake: wrk keeps each connection slot's TLS
	// session and resumes it when the configured cache allows.
	HTTPPort, HTTPSPort, FullHandshakePort int
	// User and Group are set when nginx starts as root (workers switch to them and must be
	// able to read Content).
	User, Group string
	// TempPaths are the *_temp_path directives to render: each module compiled into the
	// binary has one, and a directive of a module compiled out is a fatal "unknown directive".
	TempPaths []string
	// Encodings are the on-the-fly encodings besides gzip the binary has modules for ("br",
	// "zstd": BinaryInfo.Encodings), turned on in the /gz/ location like gzip there; a
	// directive of a module compiled out is a fatal "unknown directive".
	Encodings []string
	// Profile, when set, is the whole config as its users get it (out of the box); the
	// Knobs then only supply the resolved worker count. See Profile.
	Profile *Profile
	// EqualBytesLevel is the gzip level whose location (/gzN/) the gzip-equal-bytes scenario
	// asks this server for; the session sets it from its probe (0 until then). Not rendered:
	// the template has a location for every level.
	EqualBytesLevel int
}

// fullHandshakeServer is the server both renderings (like for like, and out of the box) add
// for the full-handshake scenario: every connection a full handshake.
const fullHandshakeServer = `{{define "full-handshake-server"}}
{{- if .FullHandshakePort}}

    # Every connection a full handshake: no session cache, no tickets.
    server {
        listen 127.0.0.1:{{.FullHandshakePort}} ssl;
        ssl_session_cache off;
        ssl_session_tickets off;
        root {{.Content}}/html;
    }
{{- end}}
{{- end}}`

// processFiles is the user and the files under the prefix (pid, lock, error log) of both
// renderings' main context.
const processFiles = `{{define "process-files"}}
{{- if .User}}
user {{.User}} {{.Group}};
{{- end}}
pid {{.Prefix}}/logs/nginx.pid;
lock_file {{.Prefix}}/logs/nginx.lock;
error_log {{.Prefix}}/logs/error.log warn;
{{- end}}`

var confTemplate = template.Must(template.Must(template.Must(template.New("nginx.conf").Parse(`# Rendered by nginx-forge's benchmark: every server under test gets this same template;
# only the prefix, the ports and (in the tuning sweep) the knobs differ.
worker_processes {{.WorkerProcesses}};
{{- if .WorkerRlimitNofile}}
worker_rlimit_nofile {{.WorkerRlimitNofile}};
{{- end}}
{{- template "process-files" .}}

events {
    worker_connections {{.WorkerConnections}};
}

http {
    # Inline so the config is self-contained: no mime.types from either package.
    types {
        text/html html;
        application/json json;
        application/octet-stream bin;
    }
    default_type application/octet-stream;
    # Logging to a file would measure the disk, not nginx.
    access_log off;
    server_tokens off;
{{range .TempPaths}}
    {{.}}_temp_path {{$.Prefix}}/tmp/{{.}};
{{- end}}

    sendfile {{if .Sendfile}}on{{else}}off{{end}};
    tcp_nopush {{if .TCPNopush}}on{{else}}off{{end}};
    keepalive_requests {{.KeepaliveRequests}};
    keepalive_timeout {{.KeepaliveTimeout}};
{{- if .OpenFileCache}}
    open_file_cache {{.OpenFileCache}};
{{- if .OpenFileCacheValid}}
    open_file_cache_valid {{.OpenFileCacheValid}};
{{- end}}
{{- else}}
    open_file_cache off;
{{- end}}

    ssl_certificate {{.Content}}/tls/cert.pem;
    ssl_certificate_key {{.Content}}/tls/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache {{.SSLSessionCache}};
    ssl_session_tickets {{if .SSLSessionTickets}}on{{else}}off{{end}};

    gzip off;

    server {
        listen 127.0.0.1:{{.HTTPPort}};
        listen 127.0.0.1:{{.HTTPSPort}} ssl;
        root {{.Content}}/html;

        location /gz/ {
            gzip on;
            gzip_types application/json;
            gzip_min_length 1024;
            gzip_comp_level {{.GzipCompLevel}};
{{- range .EncodingDirectives}}
            {{.}};
{{- end}}
        }
{{- range .GzipLevels}}

        # The same JSON at gzip_comp_level {{.}}: gzip-equal-bytes probes every level and
        # then loads each server at its own.
        location /gz{{.}}/ {
            alias {{$.Content}}/html/gz/;
            gzip on;
            gzip_types application/json;
            gzip_min_length 1024;
            gzip_comp_level {{.}};
        }
{{- end}}
    }
{{- template "full-handshake-server" .}}
}
`)).Parse(fullHandshakeServer)).Parse(processFiles))

// Render writes the nginx.conf for c.
func (c Config) Render() ([]byte, error) {
	if c.Profile != nil {
		return c.renderProfile()
	}
	if err := c.Knobs.Validate(); err != nil {
		return nil, err
	}
	if c.Prefix == "" || c.Content == "" || c.HTTPPort == 0 || c.HTTPSPort == 0 {
		return nil, fmt.Errorf("rendering nginx.conf: prefix, content and both ports are required")
	}
	var b bytes.Buffer
	if err := confTemplate.Execute(&b, c); err != nil {
		return nil, fmt.Errorf("rendering nginx.conf: %w", err)
	}
	return b.Bytes(), nil
}

// Variant is one change of the knobs, as the tuning sweep tries it.
type Variant struct {
	// Knob is the setting changed ("worker_processes"); variants of one knob are
	// alternatives, of which the best combination takes at most one.
	Knob string
	// Name says what changed, e.g. "worker_connections 4096 + worker_rlimit_nofile 8192".
	Name  string
	Apply func(*Knobs)
}

// Variants are the one-knob-at-a-time changes of the tuning document (worker_processes,
// worker_connections with worker_rlimit_nofile, open_file_cache) plus keep-alive, the TLS
// session cache and tickets, and sendfile, each relative to base. serverCPUs is how many CPUs
// the server gets, so the worker count variants mean something on this machine.
func Variants(base Knobs, serverCPUs int) []Variant {
	var vs []Variant
	add := func(name string, f func(*Knobs)) {
		vs = append(vs, Variant{Knob: strings.Fields(name)[0], Name: name, Apply: f})
	}

	// The tuning document went from 4 to 8 workers on 4 CPUs; try one worker and twice the CPUs.
	for _, n := range []int{1, 2 * serverCPUs} {
		v := strconv.Itoa(n)
		if v != base.WorkerProcesses && !(base.WorkerProcesses == "auto" && n == serverCPUs) {
			add("worker_processes "+v, func(k *Knobs) { k.WorkerProcesses = v })
		}
	}
	if base.WorkerConnections < 4096 {
		add("worker_connections 4096 + worker_rlimit_nofile 8192", func(k *Knobs) {
			k.WorkerConnections, k.WorkerRlimitNofile = 4096, 8192
		})
	} else {
		add("worker_connections 1024", func(k *Knobs) { k.WorkerConnections = 1024 })
	}
	if base.OpenFileCache == "" {
		add("open_file_cache max=1024 inactive=10s, valid 120s", func(k *Knobs) {
			k.OpenFileCache, k.OpenFileCacheValid = "max=1024 inactive=10s", "120s"
		})
	} else {
		add("open_file_cache off", func(k *Knobs) { k.OpenFileCache, k.OpenFileCacheValid = "", "" })
	}
	if base.KeepaliveRequests < 10000 {
		add("keepalive_requests 10000", func(k *Knobs) { k.KeepaliveRequests = 10000 })
	} else {
		add("keepalive_requests 100", func(k *Knobs) { k.KeepaliveRequests = 100 })
	}
	if base.SSLSessionCache == "none" || base.SSLSessionCache == "off" {
		add("ssl_session_cache shared:SSL:10m", func(k *Knobs) { k.SSLSessionCache = "shared:SSL:10m" })
	} else {
		add("ssl_session_cache off", func(k *Knobs) { k.SSLSessionCache = "off" })
	}
	b := base.SSLSessionTickets
	add(fmt.Sprintf("ssl_session_tickets %s", onOff(!b)), func(k *Knobs) { k.SSLSessionTickets = !b })
	s := base.Sendfile
	add(fmt.Sprintf("sendfile %s, tcp_nopush %s", onOff(!s), onOff(!s)), func(k *Knobs) { k.Sendfile = !s; k.TCPNopush = !s })
	if s {
		// With sendfile, tcp_nopush costs two setsockopt(TCP_CORK) calls per response.
		n := base.TCPNopush
		add(fmt.Sprintf("tcp_nopush %s", onOff(!n)), func(k *Knobs) { k.TCPNopush = !n })
	}
	return vs
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
