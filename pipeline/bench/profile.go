package bench

import (
	"bytes"
	"crypto/tls"
	_ "embed"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// A Profile is a server's configuration as its users get it ("out of the box"): the
// directives of a real nginx.conf (the image's shipped one, or Debian's default), kept as
// written, in the bench's frame (its ports, content, certificate, prefix). The like-for-like
// comparison gives both servers the same Knobs; a Profile gives each its own whole config.
//
// Kept: every simple directive at the main, events and http levels, with includes expanded.
// Left out, because they name this machine's paths or the bench's own frame: pid,
// lock_file, error_log, user, daemon, load_module, env, include (expanded instead),
// *_temp_path, ssl_certificate(_key), default_type and types {} (the bench's own types map
// the content's extensions as mime.types does), and every block other than events and http
// (server, location, map, types, upstream, stream, mail): the bench adds its own servers.
// An access_log to a file is written under the prefix's logs/ (truncated between runs);
// /dev/stdout goes to a pipe the bench drains, as a container runtime does.
type Profile struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// WorkerProcesses is the config's worker_processes ("" when it sets none: nginx's 1).
	WorkerProcesses string      `json:"worker_processes,omitempty"`
	Main            []Directive `json:"main"`
	Events          []Directive `json:"events"`
	HTTP            []Directive `json:"http"`
}

// Directive is one simple directive; Args keep their quotes as written.
type Directive struct {
	Name string   `json:"name"`
	Args []string `json:"args,omitempty"`
}

func (d Directive) String() string {
	if len(d.Args) == 0 {
		return d.Name + ";"
	}
	return d.Name + " " + strings.Join(d.Args, " ") + ";"
}

//go:embed debian-nginx.conf
var debianConf []byte

// DebianDefaultProfile is Debian 12's shipped /etc/nginx/nginx.conf (worker_processes auto,
// 768 connections, sendfile and tcp_nopush on, gzip on for text/html only, no
// ssl_session_cache, TLS 1.0-1.3, access log to a file), without its includes, which name
// only Debian's module and site directories.
func DebianDefaultProfile() (*Profile, error) {
	return parseProfile("Debian default nginx.conf", "debian-nginx.conf (embedded)", debianConf, "")
}

// maxConf bounds a config file read (its includes too): nginx.conf files are a few KB.
const maxConf = 1 << 20

// ReadProfile reads a config file. confDir, when not "", is where its includes are looked
// up: an absolute /etc/nginx/... include is read from confDir/..., and a relative one from
// confDir (an install tree's etc/nginx; "" means includes are left out).
func ReadProfile(name, path, confDir string) (*Profile, error) {
	b, err := safeio.ReadInput(path, maxConf)
	if err != nil {
		return nil, fmt.Errorf("out-of-box config: %w", err)
	}
	return parseProfile(name, path, b, confDir)
}

// parseProfile reads the directives of a config (see Profile).
func parseProfile(name, source string, conf []byte, confDir string) (*Profile, error) {
	p := &Profile{Name: name, Source: source}
	var walk func(file string, conf []byte, ctx string, depth int) error
	walk = func(file string, conf []byte, ctx string, depth int) error {
		stmts, err := parseConf(conf)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		return visit(stmts, ctx, func(d Directive, ctx string) error {
			if d.Name == "include" {
				if confDir == "" || len(d.Args) != 1 {
					return nil
				}
				if depth > 8 {
					return fmt.Errorf("%s: includes nested deeper than 8", file)
				}
				pat := unquote(d.Args[0])
				if rel, ok := strings.CutPrefix(pat, "/etc/nginx/"); ok {
					pat = filepath.Join(confDir, rel)
				} else if !filepath.IsAbs(pat) {
					pat = filepath.Join(confDir, pat)
				} else {
					return nil // outside the config directory: not part of what ships
				}
				files, err := filepath.Glob(pat)
				if err != nil {
					return fmt.Errorf("%s: include %s: %w", file, d.Args[0], err)
				}
				sort.Strings(files)
				for _, f := range files {
					b, err := safeio.ReadInput(f, maxConf)
					if err != nil {
						return fmt.Errorf("%s: include: %w", file, err)
					}
					if err := walk(f, b, ctx, depth+1); err != nil {
						return err
					}
				}
				return nil
			}
			if dropped(d.Name) {
				return nil
			}
			switch ctx {
			case "main":
				if d.Name == "worker_processes" && len(d.Args) == 1 {
					p.WorkerProcesses = d.Args[0]
					return nil
				}
				p.Main = append(p.Main, d)
			case "events":
				p.Events = append(p.Events, d)
			case "http":
				p.HTTP = append(p.HTTP, d)
			}
			return nil
		})
	}
	if err := walk(source, conf, "main", 0); err != nil {
		return nil, err
	}
	return p, nil
}

func dropped(name string) bool {
	switch name {
	case "pid", "lock_file", "error_log", "user", "daemon", "master_process", "load_module", "env",
		"ssl_certificate", "ssl_certificate_key", "default_type":
		return true
	}
	return strings.HasSuffix(name, "_temp_path")
}

// stmt is one parsed statement: a directive, with the statements of its block if it has one.
type stmt struct {
	Directive
	block []stmt
	isBlk bool
}

// visit calls f for the simple directives at the main level and inside events and http.
func visit(stmts []stmt, ctx string, f func(Directive, string) error) error {
	for _, s := range stmts {
		if !s.isBlk {
			if err := f(s.Directive, ctx); err != nil {
				return err
			}
			continue
		}
		if ctx == "main" && (s.Name == "events" || s.Name == "http") {
			if err := visit(s.block, s.Name, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseConf splits nginx config text into statements: words separated by blanks, quoted
// strings kept whole (with their quotes), # comments to the end of the line, ';' ending a
// directive and '{' '}' around a block.
func parseConf(b []byte) ([]stmt, error) {
	var words []string
	stack := [][]stmt{nil}
	line := 1
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == ';':
			if len(words) == 0 {
				return nil, fmt.Errorf("line %d: empty directive", line)
			}
			top := len(stack) - 1
			stack[top] = append(stack[top], stmt{Directive: Directive{Name: words[0], Args: words[1:]}})
			words = nil
			i++
		case c == '{':
			if len(words) == 0 {
				return nil, fmt.Errorf("line %d: block without a name", line)
			}
			top := len(stack) - 1
			stack[top] = append(stack[top], stmt{Directive: Directive{Name: words[0], Args: words[1:]}, isBlk: true})
			stack = append(stack, nil)
			words = nil
			i++
		case c == '}':
			if len(words) > 0 || len(stack) == 1 {
				return nil, fmt.Errorf("line %d: unexpected }", line)
			}
			inner := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			top := len(stack) - 1
			stack[top][len(stack[top])-1].block = inner
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(b) && b[j] != c {
				if b[j] == '\\' {
					j++
				}
				if j < len(b) && b[j] == '\n' {
					line++
				}
				j++
			}
			if j >= len(b) {
				return nil, fmt.Errorf("line %d: unterminated quote", line)
			}
			words = append(words, string(b[i:j+1]))
			i = j + 1
		default:
			j := i
			for j < len(b) && !strings.ContainsRune(" \t\r\n;{}#\"'", rune(b[j])) {
				j++
			}
			words = append(words, string(b[i:j]))
			i = j
		}
	}
	if len(words) > 0 || len(stack) != 1 {
		return nil, fmt.Errorf("unexpected end of config (a missing ; or })")
	}
	return stack[0], nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// accessLogPath maps an access_log's path into the server's prefix: /dev/stdout and
// /dev/stderr stay (the bench drains them), syslog: and off stay, a file goes to logs/.
func accessLogPath(arg, prefix string) string {
	p := unquote(arg)
	switch {
	case p == "off", p == "/dev/stdout", p == "/dev/stderr", strings.HasPrefix(p, "syslog:"), strings.HasPrefix(p, "memory:"):
		return arg
	}
	return filepath.Join(prefix, "logs", filepath.Base(p))
}

var profileTemplate = template.Must(template.Must(template.Must(template.New("nginx.conf").Funcs(template.FuncMap{
	"accessLog": func(d Directive, prefix string) string {
		if d.Name != "access_log" || len(d.Args) == 0 {
			return d.String()
		}
		args := append([]string{accessLogPath(d.Args[0], prefix)}, d.Args[1:]...)
		return Directive{Name: d.Name, Args: args}.String()
	},
}).Parse(`# Rendered by nginx-forge's benchmark, out of the box: the directives of
# {{.Profile.Source}} ({{.Profile.Name}}) as its users get them, in the benchmark's frame
# (prefix, loopback ports, content, certificate, error log).
{{- if .Profile.WorkerProcesses}}
worker_processes {{.WorkerProcesses}};
{{- end}}
{{- range .Profile.Main}}
{{.}}
{{- end}}
{{- template "process-files" .}}

events {
{{- range .Profile.Events}}
    {{.}}
{{- end}}
}

http {
    types {
        text/html html;
        application/json json;
        application/octet-stream bin;
    }
    default_type application/octet-stream;
{{range .TempPaths}}
    {{.}}_temp_path {{$.Prefix}}/tmp/{{.}};
{{- end}}
{{range .Profile.HTTP}}
    {{accessLog . $.Prefix}}
{{- end}}

    ssl_certificate {{.Content}}/tls/cert.pem;
    ssl_certificate_key {{.Content}}/tls/key.pem;

    server {
        listen 127.0.0.1:{{.HTTPPort}};
        listen 127.0.0.1:{{.HTTPSPort}} ssl;
        root {{.Content}}/html;
    }
{{- template "full-handshake-server" .}}
}
`)).Parse(fullHandshakeServer)).Parse(processFiles))

func (c Config) renderProfile() ([]byte, error) {
	if c.Prefix == "" || c.Content == "" || c.HTTPPort == 0 || c.HTTPSPort == 0 {
		return nil, fmt.Errorf("rendering nginx.conf: prefix, content and both ports are required")
	}
	var b bytes.Buffer
	if err := profileTemplate.Execute(&b, c); err != nil {
		return nil, fmt.Errorf("rendering nginx.conf from %s: %w", c.Profile.Source, err)
	}
	return b.Bytes(), nil
}

// truncateLogs empties the access logs a profile's server writes under its prefix, so long
// runs do not fill the disk (nginx appends: O_APPEND writes continue at the new end).
func truncateLogs(prefix string) {
	entries, _ := os.ReadDir(filepath.Join(prefix, "logs"))
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".log") && n != "error.log" {
			_ = os.Truncate(filepath.Join(prefix, "logs", n), 0)
		}
	}
}

// checkAsServed fetches the scenario's URL once and verifies the body against the content
// file, as served: identity, or gzip (decompressed and compared); any other encoding is only
// checked to be non-empty. It returns the Content-Encoding and the body's size on the wire,
// because out of the box a server may not compress what the like-for-like config does
// (Debian's gzip_types is text/html only).
func checkAsServed(sc Scenario, c Config) (encoding string, size int, err error) {
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, // our own self-signed certificate on loopback
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	url := sc.URL(c)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	for _, h := range sc.Headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("scenario %s: GET %s: %w", sc.Name, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, fmt.Errorf("scenario %s: GET %s: %w", sc.Name, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("scenario %s: GET %s: status %s", sc.Name, url, resp.Status)
	}
	want, err := os.ReadFile(filepath.Join(c.Content, "html", sc.Path))
	if err != nil {
		return "", 0, err
	}
	enc := resp.Header.Get("Content-Encoding")
	plain := body
	switch enc {
	case "":
	case "gzip":
		var err error
		if plain, err = toolbox.Decode(enc, body); err != nil {
			return enc, 0, fmt.Errorf("scenario %s: GET %s: Content-Encoding gzip, body is not: %w", sc.Name, url, err)
		}
	default:
		if len(body) == 0 {
			return enc, 0, fmt.Errorf("scenario %s: GET %s: empty %s body", sc.Name, url, enc)
		}
		return enc, len(body), nil
	}
	if !bytes.Equal(plain, want) {
		return enc, 0, fmt.Errorf("scenario %s: GET %s: body (%d bytes, %q encoded) differs from %s (%d bytes)", sc.Name, url, len(plain), enc, sc.Path, len(want))
	}
	if enc == "" {
		enc = "identity"
	}
	return enc, len(body), nil
}
