// Package upstreamtest is a loopback stand-in for the upstream services check-updates talks
// to: the GitHub REST API (release and tag lists, paginated with Link headers like the real
// one), nginx.org's download page, and a mirror serving tarballs, signatures and OpenPGP keys
// (<FINGERPRINT>.asc) the way pipeline/source reads a mirror. It also makes OpenPGP test keys
// and detached signatures with go-crypto, so tests can pin a key in a lock and offer a
// release signed by it (or by another key).
package upstreamtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Server is the fake upstream. Its zero value is not usable: call New.
type Server struct {
	URL string

	mu        sync.Mutex
	github    map[string][][]byte // "/repos/o/r/releases" -> pages of JSON arrays
	ghStatus  map[string]int      // "/repos/o/r" -> forced HTTP status
	files     map[string][]byte   // mirror file name -> content
	nginxPage []byte
	requests  []Request
}

// Request is one request the server saw.
type Request struct {
	Method, Path, RawQuery string
	Authorization          string
}

// New starts a server for the test's lifetime.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{github: map[string][][]byte{}, ghStatus: map[string]int{}, files: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// GitHubAPI is the root to pass as the GitHub API URL.
func (s *Server) GitHubAPI() string { return s.URL + "/api" }

// NginxOrg is the root to pass as the nginx.org URL.
func (s *Server) NginxOrg() string { return s.URL + "/nginx.org" }

// Mirror is the root to pass as the source mirror URL.
func (s *Server) Mirror() string { return s.URL + "/mirror" }

// SetGitHub sets the pages of a list endpoint, e.g. ("openssl/openssl", "releases", p1, p2).
func (s *Server) SetGitHub(repo, endpoint string, pages ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.github["/repos/"+repo+"/"+endpoint] = pages
}

// RemoveGitHub stops answering an endpoint set with SetGitHub (GitHub's 404 answers it).
func (s *Server) RemoveGitHub(repo, endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.github, "/repos/"+repo+"/"+endpoint)
}

// FailGitHub makes every request about repo answer status.
func (s *Server) FailGitHub(repo string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ghStatus["/repos/"+repo] = status
}

// SetFile serves content as <Mirror()>/<name>.
func (s *Server) SetFile(name string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = content
}

// RemoveFile stops serving name (the mirror answers 404).
func (s *Server) RemoveFile(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files, name)
}

// SetNginxOrg serves html as nginx.org's /en/download.html.
func (s *Server) SetNginxOrg(html []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nginxPage = html
}

// Requests returns the requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Authorization: r.Header.Get("Authorization")})
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/api/"):
		s.serveGitHub(w, r, strings.TrimPrefix(p, "/api"))
	case p == "/nginx.org/en/download.html" && s.nginxPage != nil:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(s.nginxPage)
	case strings.HasPrefix(p, "/mirror/"):
		b, ok := s.files[strings.TrimPrefix(p, "/mirror/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) serveGitHub(w http.ResponseWriter, r *http.Request, path string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	for prefix, status := range s.ghStatus {
		if strings.HasPrefix(path, prefix+"/") {
			if status == http.StatusForbidden {
				w.Header().Set("X-RateLimit-Limit", "60")
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
				w.WriteHeader(status)
				fmt.Fprint(w, `{"message":"API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`)
				return
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"message":"Server Error","status":"%d"}`, status)
			return
		}
	}
	pages, ok := s.github[path]
	if !ok {
		// A repository without releases answers an empty list, like GitHub.
		if strings.HasSuffix(path, "/releases") || strings.HasSuffix(path, "/tags") {
			w.Write([]byte("[]\n"))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`)
		return
	}
	page := 1
	if p := r.URL.Query().Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > len(pages) {
			w.Write([]byte("[]\n"))
			return
		}
		page = n
	}
	per := r.URL.Query().Get("per_page")
	link := func(n int) string {
		return fmt.Sprintf("<%s/api%s?per_page=%s&page=%d>", s.URL, path, per, n)
	}
	var rels []string
	if page > 1 {
		rels = append(rels, link(page-1)+`; rel="prev"`)
	}
	if page < len(pages) {
		rels = append(rels, link(page+1)+`; rel="next"`, link(len(pages))+`; rel="last"`)
	}
	if page > 1 {
		rels = append(rels, link(1)+`; rel="first"`)
	}
	if len(rels) > 0 {
		w.Header().Set("Link", strings.Join(rels, ", "))
	}
	w.Write(pages[page-1])
}

// ReleasesJSON renders a releases list in GitHub's shape for the given tags (newest first as
// given). A tag ending in "!pre" is marked pre-release, "!draft" a draft.
func ReleasesJSON(repo string, tags ...string) []byte {
	var out []map[string]any
	for i, t := range tags {
		pre, draft := strings.HasSuffix(t, "!pre"), strings.HasSuffix(t, "!draft")
		t = strings.TrimSuffix(strings.TrimSuffix(t, "!pre"), "!draft")
		id := 200000000 + i
		out = append(out, map[string]any{
			"url":              fmt.Sprintf("https://api.github.com/repos/%s/releases/%d", repo, id),
			"html_url":         fmt.Sprintf("https://github.com/%s/releases/tag/%s", repo, t),
			"id":               id,
			"node_id":          fmt.Sprintf("RE_kwDO%08d", id),
			"tag_name":         t,
			"target_commitish": "master",
			"name":             t,
			"draft":            draft,
			"immutable":        false,
			"prerelease":       pre,
			"created_at":       "2026-11-30T10:00:00Z",
			"published_at":     "2026-11-30T12:00:00Z",
			"assets":           []any{},
			"tarball_url":      fmt.Sprintf("https://api.github.com/repos/%s/tarball/%s", repo, t),
			"zipball_url":      fmt.Sprintf("https://api.github.com/repos/%s/zipball/%s", repo, t),
			"body":             "",
		})
	}
	if out == nil {
		return []byte("[]\n")
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return b
}

// TagsJSON renders a tags list in GitHub's shape.
func TagsJSON(repo string, names ...string) []byte {
	var out []map[string]any
	for _, n := range names {
		sum := sha256.Sum256([]byte(repo + n))
		sha := hex.EncodeToString(sum[:20])
		out = append(out, map[string]any{
			"name":        n,
			"zipball_url": fmt.Sprintf("https://api.github.com/repos/%s/zipball/refs/tags/%s", repo, n),
			"tarball_url": fmt.Sprintf("https://api.github.com/repos/%s/tarball/refs/tags/%s", repo, n),
			"commit":      map[string]any{"sha": sha, "url": fmt.Sprintf("https://api.github.com/repos/%s/commits/%s", repo, sha)},
			"node_id":     "MDM6UmVm" + sha[:12],
		})
	}
	if out == nil {
		return []byte("[]\n")
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return b
}

// Key is an OpenPGP signing key made for a test.
type Key struct {
	Entity *openpgp.Entity
	// Fingerprint is the primary key fingerprint as the lock pins it (40 upper-case hex).
	Fingerprint string
	// Armored is the armored public key, as a mirror serves <Fingerprint>.asc.
	Armored []byte
}

// NewKey makes an Ed25519 signing key created at KeysCreatedAt.
func NewKey(t testing.TB, name string) *Key {
	t.Helper()
	return NewKeyAt(t, name, KeysCreatedAt)
}

// NewKeyAt makes an Ed25519 signing key created at created: a key that can sign at a date
// before KeysCreatedAt (a locked release older than a real upstream signature).
func NewKeyAt(t testing.TB, name string, created time.Time) *Key {
	t.Helper()
	return NewExpiringKey(t, name, created, 0)
}

// NewExpiringKey makes an Ed25519 signing key created at created that expires after
// lifetime (0: never), as upstream signing keys often do.
func NewExpiringKey(t testing.TB, name string, created time.Time, lifetime time.Duration) *Key {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return created }, KeyLifetimeSecs: uint32(lifetime / time.Second)}
	e, err := openpgp.NewEntity(name, "nginx-forge test key", strings.ToLower(strings.ReplaceAll(name, " ", "."))+"@example.test", cfg)
	if err != nil {
		t.Fatalf("making test key %q: %v", name, err)
	}
	return &Key{Entity: e, Fingerprint: fmt.Sprintf("%X", e.PrimaryKey.Fingerprint), Armored: armoredPublic(t, e)}
}

// Extended is the key as its owner holds and publishes it after extending its life: each
// identity re-signed at at with the key now expiring lifetime after its creation (0: never).
// It signs what the expired k no longer can; k itself is unchanged.
func (k *Key) Extended(t testing.TB, at time.Time, lifetime time.Duration) *Key {
	t.Helper()
	secs := uint32(lifetime / time.Second)
	e := *k.Entity
	e.Identities = map[string]*openpgp.Identity{}
	for name, id := range k.Entity.Identities {
		sig := *id.SelfSignature
		sig.CreationTime = at
		sig.KeyLifetimeSecs = &secs
		if err := sig.SignUserId(name, k.Entity.PrimaryKey, k.Entity.PrivateKey, &packet.Config{Time: func() time.Time { return at }}); err != nil {
			t.Fatalf("re-signing %q: %v", name, err)
		}
		ext := *id
		ext.SelfSignature = &sig
		ext.Signatures = append(append([]*packet.Signature(nil), id.Signatures...), &sig)
		e.Identities[name] = &ext
	}
	return &Key{Entity: &e, Fingerprint: k.Fingerprint, Armored: armoredPublic(t, &e)}
}

func armoredPublic(t testing.TB, e *openpgp.Entity) []byte {
	t.Helper()
	var buf bytes.Buffer
	aw, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(aw); err != nil {
		t.Fatalf("serializing test key: %v", err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Sign returns an armored detached signature of data, made now.
func (k *Key) Sign(t testing.TB, data []byte) []byte {
	t.Helper()
	return k.SignAt(t, data, time.Now())
}

// SignAt returns an armored detached signature of data whose creation time is at (after
// KeysCreatedAt): upstream signatures carry the day they were made, and
// check-updates compares a new release's date with the locked one's.
func (k *Key) SignAt(t testing.TB, data []byte, at time.Time) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&buf, k.Entity, bytes.NewReader(data), &packet.Config{Time: func() time.Time { return at }}); err != nil {
		t.Fatalf("signing: %v", err)
	}
	return buf.Bytes()
}

// SignBinaryAt is SignAt without armor, as PCRE2 publishes its .sig files.
func (k *Key) SignBinaryAt(t testing.TB, data []byte, at time.Time) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, k.Entity, bytes.NewReader(data), &packet.Config{Time: func() time.Time { return at }}); err != nil {
		t.Fatalf("signing: %v", err)
	}
	return buf.Bytes()
}

// Tarball makes a small, deterministic .tar.gz with the given files under dir/.
func Tarball(t testing.TB, dir string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/" + n, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1740355200, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// SHA256 is the lower-case hex SHA-256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
