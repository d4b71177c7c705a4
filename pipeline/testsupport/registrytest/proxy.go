package registrytest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Action is what the fault proxy does with one request.
type Action int

const (
	// Pass forwards the request to the registry.
	Pass Action = iota
	// Fail500 answers 500 Internal Server Error without asking the registry.
	Fail500
	// Reset hijacks the connection and closes it without an answer (the client sees a
	// connection reset / unexpected EOF).
	Reset
)

func (a Action) String() string {
	switch a {
	case Pass:
		return "pass"
	case Fail500:
		return "500"
	case Reset:
		return "reset"
	}
	return "unknown"
}

// Request is what a Rule sees: the 1-based number of the request through the proxy and
// the request itself.
type Request struct {
	N      int
	Method string
	Path   string
}

// Rule decides the fate of each request. It may also act on the world (for example stop
// the registry) before returning Pass.
type Rule func(Request) Action

// Proxy is a reverse proxy on loopback in front of a registry, injecting faults. Requests
// pass until a Rule is set.
type Proxy struct {
	// Host is "127.0.0.1:PORT": use it in references instead of the registry's host.
	Host string

	mu   sync.Mutex
	n    int
	rule Rule
	log  []string
}

// NewProxy starts a proxy in front of target ("host:port", plain HTTP) for the test's
// lifetime.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	u := &url.URL{Scheme: "http", Host: target}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Keep the registry's Location headers pointing at the proxy: distribution answers
	// uploads with absolute URLs naming the host it was asked for, which is the proxy's
	// since the Host header is passed through.
	director := rp.Director
	rp.Director = func(r *http.Request) {
		host := r.Host
		director(r)
		r.Host = host
	}
	// Dial errors while the registry is stopped are the point of a fault test, not news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p := &Proxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.n++
		req := Request{N: p.n, Method: r.Method, Path: r.URL.Path}
		rule := p.rule
		p.mu.Unlock()
		act := Pass
		if rule != nil {
			act = rule(req)
		}
		p.mu.Lock()
		p.log = append(p.log, act.String()+" "+r.Method+" "+r.URL.Path)
		p.mu.Unlock()
		switch act {
		case Fail500:
			http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"injected fault"}]}`, http.StatusInternalServerError)
		case Reset:
			hj, ok := w.(http.Hijacker)
			if !ok {
				panic("registrytest: response writer cannot be hijacked")
			}
			conn, _, err := hj.Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	p.Host = strings.TrimPrefix(srv.URL, "http://")
	return p
}

// SetRule replaces the rule; nil lets every request pass.
func (p *Proxy) SetRule(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = r
}

// Requests is the number of requests seen so far (the next one is Requests()+1).
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Log returns "action METHOD path" for every request seen, in order.
func (p *Proxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// FailFrom returns a rule applying act to requests matching match (nil: all) from the
// n-th matching one on, for count requests (count < 0: forever).
func FailFrom(n, count int, act Action, match func(Request) bool) Rule {
	var mu sync.Mutex
	seen := 0
	return func(r Request) Action {
		if match != nil && !match(r) {
			return Pass
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		if seen >= n && (count < 0 || seen < n+count) {
			return act
		}
		return Pass
	}
}

// IsBlobUpload matches the requests that upload blob data (POST/PATCH/PUT under /blobs/uploads/).
func IsBlobUpload(r Request) bool { return strings.Contains(r.Path, "/blobs/uploads/") }

// IsManifestPut matches manifest and tag writes.
func IsManifestPut(r Request) bool {
	return r.Method == http.MethodPut && strings.Contains(r.Path, "/manifests/")
}
