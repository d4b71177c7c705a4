package bench

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
)

// Scenario is one kind of load.
type Scenario struct {
	Name        string
	Description string
	TLS         bool
	// FullHandshake sends the load to the listener where sessions are never resumed.
	FullHandshake bool
	Path          string   // under html/
	Headers       []string // extra request headers
	// Connections is the default number of concurrent connections (the --connections flag
	// overrides it for every scenario).
	Connections int
	// EqualBytes asks each server for Path at its own gzip level, the lowest whose response
	// is no larger than the baseline's at nginx's default level 1 (chooseGzipLevel; the
	// session probes every level before the rounds): zlib-ng's levels send more bytes than
	// zlib's of the same number, so equal levels compare unequal work.
	EqualBytes bool
	// check verifies one response before load is applied, so a misconfigured server cannot
	// look fast by answering 404s or skipping the compression.
	check func(resp *http.Response, body []byte) error
}

// Scenarios are the benchmark's kinds of load, by name.
var Scenarios = []Scenario{
	{
		Name:        "tls-handshake",
		Description: "a new connection and a full TLS handshake per request (Connection: close, to a listener with session resumption off), 1 KiB page",
		TLS:         true, FullHandshake: true, Path: SmallFile, Headers: []string{"Connection: close"}, Connections: 16,
		check: sizeIs(SmallSize),
	},
	{
		Name:        "tls-resume",
		Description: "a new connection per request (Connection: close) resuming the TLS session (wrk resumes each connection's last session; the config's ssl_session_cache/tickets decide), 1 KiB page",
		TLS:         true, Path: SmallFile, Headers: []string{"Connection: close"}, Connections: 16,
		check: sizeIs(SmallSize),
	},
	{
		Name:        "tls-keepalive",
		Description: "TLS keep-alive connections, 1 KiB page",
		TLS:         true, Path: SmallFile, Connections: 64,
		check: sizeIs(SmallSize),
	},
	{
		Name:        "http-keepalive",
		Description: "plain HTTP keep-alive connections, 16 KiB static page",
		Path:        StaticFile, Connections: 64,
		check: sizeIs(StaticSize),
	},
	{
		Name:        "gzip",
		Description: "~100 KB JSON compressed on the fly (Accept-Encoding: gzip), plain HTTP keep-alive",
		Path:        JSONFile, Headers: []string{"Accept-Encoding: gzip"}, Connections: 16,
		check: checkGzipJSON,
	},
	{
		Name: "gzip-equal-bytes",
		Description: "the gzip scenario's JSON with each server at its own gzip_comp_level: the lowest whose response is no larger than the baseline's at level 1 " +
			"(nginx's default), found by fetching it at levels 1..9 once per server before the rounds; like for like only",
		Path: JSONFile, Headers: []string{"Accept-Encoding: gzip"}, Connections: 16, EqualBytes: true,
		check: checkGzipJSON,
	},
	{
		Name: "modern-browser",
		Description: "the gzip scenario's JSON as a current browser asks for it (Accept-Encoding: " + ModernBrowser +
			"): a server with the brotli or zstd module answers br (preferred) or zstd, one without answers gzip; the body must decode to the JSON",
		Path: JSONFile, Headers: []string{"Accept-Encoding: " + ModernBrowser}, Connections: 16,
		check: checkModernBrowser,
	},
	{
		Name:        "tls-large",
		Description: "10 MiB incompressible file over TLS keep-alive",
		TLS:         true, Path: LargeFile, Connections: 4,
		check: sizeIs(LargeSize),
	},
}

var jsonDocBytes = sync.OnceValue(jsonDoc)

// checkGzipJSON accepts a gzip response that decodes to exactly the JSON document.
func checkGzipJSON(resp *http.Response, body []byte) error {
	if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
		return fmt.Errorf("Content-Encoding %q, want gzip", ce)
	}
	plain, err := toolbox.Decode("gzip", body)
	if err != nil {
		return fmt.Errorf("response is not gzip: %w", err)
	}
	if !bytes.Equal(plain, jsonDocBytes()) {
		return fmt.Errorf("the gzip body decodes to %d bytes that are not the %d-byte JSON document", len(plain), len(jsonDocBytes()))
	}
	return nil
}

func sizeIs(n int) func(*http.Response, []byte) error {
	return func(resp *http.Response, body []byte) error {
		if len(body) != n {
			return fmt.Errorf("body is %d bytes, want %d", len(body), n)
		}
		return nil
	}
}

// ScenarioNames lists the names in order.
func ScenarioNames() []string {
	var n []string
	for _, s := range Scenarios {
		n = append(n, s.Name)
	}
	return n
}

// SelectScenarios returns the scenarios named in list (comma-separated; "" or "all" for all).
func SelectScenarios(list string) ([]Scenario, error) {
	if list == "" || list == "all" {
		return Scenarios, nil
	}
	byName := map[string]Scenario{}
	for _, s := range Scenarios {
		byName[s.Name] = s
	}
	var out []Scenario
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		s, ok := byName[n]
		if !ok {
			names := ScenarioNames()
			sort.Strings(names)
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", n, strings.Join(names, ", "))
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// URL is the scenario's address on a server. An EqualBytes scenario asks for the server's
// chosen level's location (c.EqualBytesLevel); before the probe has chosen one it is level
// 0, which no location serves, so a request made too early fails with a 404.
func (s Scenario) URL(c Config) string {
	if s.EqualBytes {
		return fmt.Sprintf("http://127.0.0.1:%d/%s", c.HTTPPort, gzipLevelPath(c.EqualBytesLevel))
	}
	if s.TLS && s.FullHandshake && c.FullHandshakePort != 0 {
		return fmt.Sprintf("https://127.0.0.1:%d/%s", c.FullHandshakePort, s.Path)
	}
	if s.TLS {
		return fmt.Sprintf("https://127.0.0.1:%d/%s", c.HTTPSPort, s.Path)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/%s", c.HTTPPort, s.Path)
}

// Check fetches the scenario's URL once with the scenario's headers and verifies the
// response: status 200 and the expected body.
func (s Scenario) Check(c Config) error {
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, // our own self-signed certificate on loopback
		DisableCompression: true,                                  // see the bytes nginx sends
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	url := s.URL(c)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for _, h := range s.Headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("scenario %s: GET %s: %w", s.Name, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("scenario %s: GET %s: %w", s.Name, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scenario %s: GET %s: status %s", s.Name, url, resp.Status)
	}
	if s.check != nil {
		if err := s.check(resp, body); err != nil {
			return fmt.Errorf("scenario %s: GET %s: %w", s.Name, url, err)
		}
	}
	return nil
}

// asksForCompression reports whether the scenario's requests accept a compressed response
// (an Accept-Encoding header): its report then gives the bytes of the response as served.
func (s Scenario) asksForCompression() bool {
	for _, h := range s.Headers {
		if k, _, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Accept-Encoding") {
			return true
		}
	}
	return false
}
