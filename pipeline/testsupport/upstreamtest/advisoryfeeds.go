package upstreamtest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// AdvisoryFeeds stands in for the two advisory feeds check-updates reads, with upstream's
// recorded answers (pipeline/advisory/testdata): nginx.org's security_advisories.xml whole
// (nginx/nginx.org at 3924a7f8), GitHub's contents listing of openssl/release-metadata
// secjson/ (the real shape, trimmed to five files) with each download_url moved onto this
// server, and the records of recordedOpenSSL. Nginx and Listing, when set, replace those
// answers (hostile feeds).
type AdvisoryFeeds struct {
	*httptest.Server
	Nginx, Listing http.HandlerFunc

	mu    sync.Mutex
	paths []string
}

// Requests are the paths asked for, in order.
func (f *AdvisoryFeeds) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.paths)
}

// recordedOpenSSL are the OpenSSL advisories whose records the stand-in serves (the listing
// names two more, which answer 404 like a record that went away).
var recordedOpenSSL = []string{"CVE-2024-12797", "CVE-2024-5535", "CVE-2025-9230"}

// NewAdvisoryFeeds serves them for the test's lifetime.
func NewAdvisoryFeeds(t testing.TB) *AdvisoryFeeds {
	t.Helper()
	td := filepath.Join(testenv.RepoRoot(), "pipeline", "advisory", "testdata")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(td, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	xml, listing := read("nginx-security_advisories-3924a7f8.xml"), read("openssl-secjson-listing.json")
	f := &AdvisoryFeeds{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		switch p := r.URL.Path; {
		case p == "/nginx.xml" && f.Nginx != nil:
			f.Nginx(w, r)
		case p == "/nginx.xml":
			w.Write(xml)
		case p == "/secjson" && f.Listing != nil:
			f.Listing(w, r)
		case p == "/secjson":
			w.Write(bytes.ReplaceAll(listing, []byte("https://raw.githubusercontent.com/openssl/release-metadata/main"), []byte(f.URL+"/raw")))
		case strings.HasPrefix(p, "/raw/secjson/CVE-"):
			b, err := os.ReadFile(filepath.Join(td, "openssl-"+strings.TrimPrefix(p, "/raw/secjson/")))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			w.Write(b)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// Flags are check-updates' flags that read these feeds.
func (f *AdvisoryFeeds) Flags() []string {
	return []string{"--nginx-advisories", f.URL + "/nginx.xml", "--openssl-advisories", f.URL + "/secjson"}
}

// FeedSnapshot is the reviewed snapshot (pipeline/advisory/advisories.json) as these feeds
// state it, less the nginx advisories drop: its OpenSSL entries only those of
// recordedOpenSSL. A refresh against the feeds starting from it adds exactly drop; with
// nothing dropped it changes nothing.
func FeedSnapshot(t testing.TB, drop ...string) []byte {
	t.Helper()
	s, err := advisory.Load(filepath.Join(testenv.RepoRoot(), advisory.DefaultPath))
	if err != nil {
		t.Fatal(err)
	}
	var keep []advisory.Advisory
	for _, a := range s.Advisories {
		switch {
		case a.Component == "nginx" && slices.Contains(drop, a.ID):
		case a.Component == "openssl" && !slices.Contains(recordedOpenSSL, a.ID):
		default:
			keep = append(keep, a)
		}
	}
	s.Advisories = keep
	b, err := s.Write()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
