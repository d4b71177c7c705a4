package upstreamtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Keyserver is a key server on loopback that answers like keyserver.ubuntu.com's HKP
// interface: GET /pks/lookup?op=get&options=mr&search=0x<FINGERPRINT> is the armored key
// (Content-Type application/pgp-keys), or 404 "No results found".
type Keyserver struct {
	URL string // the bare server, as --keyserver takes it

	mu       sync.Mutex
	keys     map[string][]byte
	requests []string
}

// NewKeyserver starts one for the test's lifetime.
func NewKeyserver(t testing.TB) *Keyserver {
	t.Helper()
	ks := &Keyserver{keys: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(ks.serve))
	t.Cleanup(srv.Close)
	ks.URL = srv.URL
	return ks
}

// Serve makes the server answer for fpr with body (any bytes: a test may serve the wrong key).
func (ks *Keyserver) Serve(fpr string, body []byte) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keys[fpr] = body
}

// Requests are the fingerprints asked for, in order.
func (ks *Keyserver) Requests() []string {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return append([]string(nil), ks.requests...)
}

func (ks *Keyserver) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.URL.Path != "/pks/lookup" || q.Get("op") != "get" {
		http.NotFound(w, r)
		return
	}
	fpr := strings.ToUpper(strings.TrimPrefix(q.Get("search"), "0x"))
	ks.mu.Lock()
	ks.requests = append(ks.requests, fpr)
	body, ok := ks.keys[fpr]
	ks.mu.Unlock()
	if !ok {
		http.Error(w, "No results found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/pgp-keys")
	w.Write(body)
}
