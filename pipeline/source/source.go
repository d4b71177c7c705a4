// Package source turns the components of a lock into verified files on disk: it downloads
// each tarball (from upstream or a mirror) with retries and a size cap into a content-addressed
// cache, checks its SHA-256 before anything uses it, and checks the upstream PGP signature
// against the fingerprints pinned in the lock, with the signers' keys vendored in
// pipeline/lock/keys or, for a signer no Debian package carries, fetched by fingerprint from a
// key server and cached.
//
// Nothing that failed a check ever lands in the cache: downloads go to a temporary file in the
// cache directory and are renamed into place only after they verified. A cache hit is hashed
// again before use, so a file changed on disk is caught as surely as one changed in transit.
package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/redirects"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// defaultKeyservers are where a signer key that is not vendored (pipeline/lock/keys) is
// fetched from, in order, with the fingerprint in place of %s. keyserver.ubuntu.com comes
// first because it keeps user IDs; keys.openpgp.org serves a key without the user IDs its
// owner has not confirmed, which the fetcher still accepts through the key's direct-key
// self-signature (see pickKey).
var defaultKeyservers = []string{
	"https://keyserver.ubuntu.com/pks/lookup?op=get&options=mr&search=0x%s",
	"https://keys.openpgp.org/vks/v1/by-fingerprint/%s",
}

// DefaultMaxSize caps every download. The largest tarball (OpenSSL) is about 53 MB; the cap
// is there so a wrong URL or a hostile server cannot fill the disk.
const DefaultMaxSize = 256 << 20

// defaultRetries is how many times a failed download is tried again.
const defaultRetries = 3

// Small files (signatures, keys) have their own, much smaller cap.
const maxSmallFile = 1 << 20

// Fetcher downloads and verifies component sources. Create it with New; it is safe for
// concurrent use.
type Fetcher struct {
	cacheDir      string
	mirror        string
	keyservers    []string
	keyserversSet bool
	client        *http.Client
	sink          progress.Sink
	maxSize       int64
	retries       int
	backoff       time.Duration
	stall         time.Duration
	now           func() time.Time
	initErr       error
	keysDir       string
	epoch         time.Time

	// refreshed holds the copies of vendored keys that RefreshKey fetched in this run, by
	// fingerprint: they stand for the vendored file until the update writes them over it.
	refreshMu sync.Mutex
	refreshed map[string][]byte
}

// Option configures a Fetcher.
type Option func(*Fetcher)

// WithCacheDir sets the cache directory. The default is $XDG_CACHE_HOME/nginx-forge/sources
// (~/.cache/nginx-forge/sources).
func WithCacheDir(dir string) Option { return func(f *Fetcher) { f.cacheDir = dir } }

// WithMirror fetches every file from baseURL instead of upstream: tarballs and signatures as
// baseURL/<file name> (the last element of the lock's URL), and keys that are not vendored as
// baseURL/<FINGERPRINT>.asc (unless WithKeyserver is also given). The checks are the same, so
// a mirror needs no trust: plain http is fine. A vendored key is never taken from a mirror.
func WithMirror(baseURL string) Option {
	return func(f *Fetcher) { f.mirror = strings.TrimSuffix(baseURL, "/") }
}

// WithKeyserver replaces the key servers (defaultKeyservers, or the mirror's keys) that keys
// which are not vendored are fetched from; they are tried in order. Each URL is one of:
//   - a URL containing %s, which is replaced by the fingerprint
//     ("https://keyserver.ubuntu.com/pks/lookup?op=get&options=mr&search=0x%s");
//   - a bare server ("https://keyserver.ubuntu.com", also hkps://host): its HKP lookup,
//     /pks/lookup?op=get&options=mr&search=0x<FINGERPRINT>;
//   - any other URL, to which /<FINGERPRINT> is appended
//     ("https://keys.openpgp.org/vks/v1/by-fingerprint").
//
// Whatever a server sends is used only if it holds the key with exactly the requested
// fingerprint; a vendored key is never fetched.
func WithKeyserver(urls ...string) Option {
	return func(f *Fetcher) {
		f.keyservers = nil
		for _, u := range urls {
			f.keyservers = append(f.keyservers, u)
		}
		f.keyserversSet = true
	}
}

// WithKeysDir names a directory of reviewed signer keys (<FINGERPRINT>.asc, the layout of
// pipeline/lock/keys), trusted like the keys embedded in the program: the keys directory
// beside a lock file, where an update vendors a new signer's key in the same change as the
// lock, so that the lock builds without a key server before the program is rebuilt.
func WithKeysDir(dir string) Option { return func(f *Fetcher) { f.keysDir = dir } }

// WithSink receives what the fetcher does (cache hits, downloads, verifications, retries) as
// Detail notes: lines a person sees with -v. The default discards them. FetchAll fetches
// components concurrently, so the sink's Send may be called from several goroutines at once
// (progress.Sink).
func WithSink(s progress.Sink) Option {
	return func(f *Fetcher) {
		if s != nil {
			f.sink = s
		}
	}
}

// WithSourceDateEpoch is the time (Unix seconds: the lock's source_date_epoch) given to every
// file and directory of a git-pinned source's prepared archive (unpack.PackGitTree): its git
// tree covers no time, so the time a stage sees is the lock's, not the mirror's. The default,
// 0, is 1970-01-01; a build passes its lock's (forge), so that the prepared archive is a
// function of the pin and the epoch, both of which the host engine's stage key holds.
func WithSourceDateEpoch(epoch int64) Option {
	return func(f *Fetcher) { f.epoch = time.Unix(epoch, 0) }
}

// WithMaxSize caps the size of a downloaded tarball in bytes (default DefaultMaxSize).
func WithMaxSize(n int64) Option { return func(f *Fetcher) { f.maxSize = n } }

// WithRetries sets how many times a failed download is retried (default defaultRetries; 0
// tries once). Only transient failures are retried: network errors, cut-off bodies, 5xx and
// 429. A 404, an oversized file or a wrong checksum is not going to get better.
func WithRetries(n int) Option { return func(f *Fetcher) { f.retries = n } }

// withBackoff sets the wait before the first retry (default 1s); each further retry waits
// twice as long, up to 30s.
func withBackoff(d time.Duration) Option { return func(f *Fetcher) { f.backoff = d } }

// WithStallTimeout sets the stall time (default DefaultStallTimeout): a download that moves
// less than minProgress bytes in it is abandoned and retried (a server that went quiet, or
// trickles to hold the build), and a git fetch that says nothing for it is stopped
// (GitStallError).
func WithStallTimeout(d time.Duration) Option { return func(f *Fetcher) { f.stall = d } }

// DefaultStallTimeout is the stall time of downloads and of git fetch.
const DefaultStallTimeout = time.Minute

// minProgress is the floor of a download: at least this many bytes in every stall time, as
// registry transfers have (image.DefaultStallTimeout, --registry-timeout). A mirror that sent
// one byte a second kept a build fetching past four minutes when any byte restarted the
// timer (issue 47); 1 KiB a minute is still far below any link a build could use.
const minProgress = 1 << 10

// withNow sets the clock used to judge whether keys and signatures are currently revoked or
// expired (default time.Now).
func withNow(now func() time.Time) Option { return func(f *Fetcher) { f.now = now } }

// New returns a Fetcher. Problems with the options (no usable cache directory, a bad mirror
// URL) are reported by the first Fetch, so New can be used in expressions.
func New(opts ...Option) *Fetcher {
	f := &Fetcher{
		keyservers: defaultKeyservers,
		sink:       progress.Discard,
		maxSize:    DefaultMaxSize,
		retries:    defaultRetries,
		backoff:    time.Second,
		stall:      DefaultStallTimeout,
		now:        time.Now,
		epoch:      time.Unix(0, 0),
	}
	for _, o := range opts {
		o(f)
	}
	// A 30s connect/header timeout and no overall one: a 50 MB tarball on a slow link
	// legitimately takes minutes (the stall timeout catches a download that stops).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 30 * time.Second
	f.client = &http.Client{Transport: tr, CheckRedirect: redirects.Check}
	if f.cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			f.initErr = fmt.Errorf("finding the cache directory: %w (set XDG_CACHE_HOME, or give the cache directory: --cache DIR)", err)
		}
		f.cacheDir = filepath.Join(base, "nginx-forge", "sources")
	}
	if f.mirror != "" {
		if u, err := url.Parse(f.mirror); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			f.initErr = fmt.Errorf("mirror %q is not an http(s) URL like http://127.0.0.1:8000/sources", safeio.RedactURL(f.mirror))
		}
	}
	if f.keyserversSet && len(f.keyservers) == 0 {
		f.initErr = errors.New("no key server given: name at least one URL, like https://keyserver.ubuntu.com")
	}
	templates := make([]string, 0, len(f.keyservers))
	for _, ks := range f.keyservers {
		t, err := keyserverTemplate(ks)
		if err != nil {
			f.initErr = err
			break
		}
		templates = append(templates, t)
	}
	f.keyservers = templates
	if f.maxSize <= 0 {
		f.initErr = fmt.Errorf("maximum download size %d must be positive", f.maxSize)
	}
	if f.stall <= 0 {
		f.initErr = fmt.Errorf("stall timeout %s must be positive", f.stall)
	}
	if f.retries < 0 {
		f.retries = 0
	}
	if f.initErr == nil {
		// The cache holds what the build compiles (the prepared archives): another user who
		// could write it could swap what was verified (safeio.CheckPrivateDir).
		if err := safeio.CheckPrivateDir(f.cacheDir); err != nil {
			f.initErr = fmt.Errorf("source cache (--cache): %w", err)
		}
	}
	return f
}

// Err is what New found wrong with the options or the cache directory, which every fetch
// returns before fetching anything; a build's preflight asks for it first.
func (f *Fetcher) Err() error { return f.initErr }

// CacheDir is the directory the fetcher caches verified files in.
func (f *Fetcher) CacheDir() string { return f.cacheDir }

// ChecksumError reports a file whose SHA-256 is not the one pinned in the lock.
type ChecksumError struct {
	File string // file name
	URL  string // where it came from
	Want string // the lock's digest
	Got  string // the digest of what was received
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("checksum mismatch for %s from %s: the lock pins sha256 %s, the file has sha256 %s; "+
		"the file was not used and nothing was cached. If the mirror is wrong, fix or drop --mirror; "+
		"if upstream re-released the file, review the change and update the lock with `go run ./ci check-updates --write`",
		e.File, e.URL, e.Want, e.Got)
}

var (
	sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	fprRE    = regexp.MustCompile(`^[0-9A-F]{40}$`)
)

// fileNames checks and returns the names the tarball and its signature (empty when the
// lock pins none) are stored under, and the pinned fingerprints' form.
func fileNames(c lock.Component) (name, sigName string, err error) {
	name = c.FileName()
	if err := checkFileName(name); err != nil {
		return "", "", fmt.Errorf("url %q: %w", c.URL, err)
	}
	if c.Signature == nil {
		return name, "", nil
	}
	sigName = c.SignatureFileName()
	if err := checkFileName(sigName); err != nil {
		return "", "", fmt.Errorf("signature url %q: %w", c.Signature.URL, err)
	}
	if sigName == name {
		return "", "", fmt.Errorf("signature url %q names the tarball itself", c.Signature.URL)
	}
	if len(c.Signature.Fingerprints) == 0 {
		return "", "", errors.New("signature has no pinned fingerprints")
	}
	for _, fp := range c.Signature.Fingerprints {
		if !fprRE.MatchString(fp) {
			return "", "", fmt.Errorf("pinned fingerprint %q is not 40 upper-case hex digits", fp)
		}
	}
	return name, sigName, nil
}

// Fetch downloads (or finds in the cache) the component's tarball and verifies its SHA-256
// and, when the lock pins one, its PGP signature.
func (f *Fetcher) Fetch(ctx context.Context, c lock.Component) (Verified, error) {
	v, err := f.fetch(ctx, c)
	if err != nil {
		return Verified{}, fmt.Errorf("source %s %s: %w", c.Name, c.Version, err)
	}
	return v, nil
}

func (f *Fetcher) fetch(ctx context.Context, c lock.Component) (Verified, error) {
	if f.initErr != nil {
		return Verified{}, f.initErr
	}
	if c.Git != nil {
		return f.fetchGit(ctx, c)
	}
	if !sha256RE.MatchString(c.SHA256) {
		return Verified{}, fmt.Errorf("sha256 %q is not 64 lower-case hex digits", c.SHA256)
	}
	name, sigName, err := fileNames(c)
	if err != nil {
		return Verified{}, err
	}

	dir := filepath.Join(f.cacheDir, "sha256", c.SHA256)
	tarball := filepath.Join(dir, name)
	v := Verified{Name: c.Name, Version: c.Version, Path: tarball, SHA256: c.SHA256, Unsigned: c.Unsigned}

	hit, err := f.cached(tarball, c.SHA256)
	if err != nil {
		return Verified{}, err
	}
	var pr preparedArchive
	if !hit {
		src := f.fileURL(c.URL)
		err := f.downloadChecked(ctx, src, tarball, name, f.maxSize, func(file, got string) error {
			if got != c.SHA256 {
				return &ChecksumError{File: name, URL: src, Want: c.SHA256, Got: got}
			}
			pr, err = f.prepare(ctx, c, file, name, src)
			return err
		})
		if err != nil {
			return Verified{}, err
		}
		v.URL = src
	} else {
		f.sink.Send(progress.Detailf("%s: cached %s", c.Name, tarball))
		if pr, err = f.prepare(ctx, c, tarball, name, "the cache"); err != nil {
			var ue *unpack.Error
			if errors.As(err, &ue) {
				err = errors.Join(err, removeRefused(tarball))
			}
			return Verified{}, err
		}
	}
	v.Prepared, v.Top = pr.path, pr.top
	if c.Signature == nil {
		return v, nil
	}

	// The signature is cached next to the tarball, but only once it verified, so that a
	// second build needs no network at all. It is verified again on every use: the pinned
	// fingerprints in the lock may have changed since.
	sigPath := filepath.Join(dir, sigName)
	res, err := f.cachedSignature(ctx, c, tarball, sigPath, sigName)
	if err == nil && res == nil {
		res, err = f.fetchSignature(ctx, c, tarball, sigPath, sigName)
	}
	if err != nil {
		return Verified{}, err
	}
	v.Signed, v.SignedBy, v.SignedAt, v.SignerVendored = true, res.fingerprint, res.created, res.vendored
	f.sink.Send(progress.Detailf("%s: signature %s made %s by %s verified", c.Name, sigName, res.created.UTC().Format(time.RFC3339), res.fingerprint))
	return v, nil
}

// FetchAll fetches and verifies every component of the lock before returning, so that a
// build can stop before any compiler runs. Components are fetched concurrently; every
// failure is reported (joined), not only the first, and a server that none of them reached
// once (*unreachableError). The map is keyed by component name.
func (f *Fetcher) FetchAll(ctx context.Context, l *lock.Lock) (map[string]Verified, error) {
	if l == nil {
		return nil, errors.New("fetching sources: no lock")
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		out  = make(map[string]Verified, len(l.Components))
		errs = make(map[string]error)
	)
	for _, c := range l.Components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := f.Fetch(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[c.Name] = err
				return
			}
			out[c.Name] = v
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		names := make([]string, 0, len(errs))
		for n := range errs {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return order(names[i]) < order(names[j]) })
		list, labels := make([]error, 0, len(names)), make([]string, 0, len(names))
		for _, n := range names {
			list = append(list, errs[n])
			labels = append(labels, n+" "+l.MustComponent(n).Version)
		}
		return nil, errors.Join(f.groupUnreachable(labels, list)...)
	}
	return out, nil
}

func order(name string) int {
	for i, n := range lock.ComponentOrder {
		if n == name {
			return i
		}
	}
	return len(lock.ComponentOrder)
}

// fileURL is where a lock URL is fetched from: upstream, or the mirror's copy of the file.
func (f *Fetcher) fileURL(upstream string) string {
	if f.mirror == "" || strings.HasPrefix(upstream, "file://") {
		return upstream
	}
	return f.mirror + "/" + url.PathEscape(lastElem(upstream))
}

// keyURLs are where a key that is not vendored is fetched from, in order: the mirror's copy
// when there is a mirror and no key server was given, else the key servers.
func (f *Fetcher) keyURLs(fpr string) []string {
	if f.mirror != "" && !f.keyserversSet {
		return []string{f.mirror + "/" + fpr + ".asc"}
	}
	var out []string
	for _, ks := range f.keyservers {
		out = append(out, strings.ReplaceAll(ks, "%s", fpr))
	}
	return out
}

// keyserverTemplate turns a key server URL (see WithKeyserver) into a template with %s
// where the fingerprint goes.
func keyserverTemplate(raw string) (string, error) {
	bad := fmt.Errorf("key server %q is not an http(s) or hkps URL like https://keyserver.ubuntu.com", raw)
	if strings.HasPrefix(raw, "hkps://") {
		raw = "https://" + strings.TrimPrefix(raw, "hkps://")
	}
	// %s is not a valid escape in a URL path: check the URL with a fingerprint in its place.
	u, err := url.Parse(strings.ReplaceAll(raw, "%s", strings.Repeat("0", 40)))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", bad
	}
	switch {
	case strings.Contains(raw, "%s"):
		return raw, nil
	case u.RawQuery != "":
		return "", fmt.Errorf("key server %q has a query but no %%s where the fingerprint goes", raw)
	case u.Path == "" || u.Path == "/":
		u.Path = "/pks/lookup"
		return u.String() + "?op=get&options=mr&search=0x%s", nil
	default:
		return strings.TrimSuffix(u.String(), "/") + "/%s", nil
	}
}

func lastElem(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Path != "" {
		return filepathBase(u.Path)
	}
	return filepathBase(raw)
}

func filepathBase(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// checkFileName refuses names that would escape or confuse the cache layout.
func checkFileName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("does not end in a file name")
	case strings.ContainsAny(name, `/\`+"\x00"), strings.HasPrefix(name, "."):
		return fmt.Errorf("file name %q is not a plain file name", name)
	}
	return nil
}
