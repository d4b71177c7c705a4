// Package lock owns the lock file: the pinned, verifiable description of every input of a
// build (component sources, their checksums and signers, the builder and runtime base images,
// and the build's fixed timestamp). Parsing is strict so that a typo never silently changes
// what gets built; writing is stable so that tools that rewrite it produce minimal diffs.
package lock

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// schemaVersion is the only lock schema this code reads and writes.
const schemaVersion = 1

// Component names, in build order. The plan relies on these names (stage names become
// DEP_<NAME> variables, hence underscores).
const (
	Zlib = "zlib"
	// ZlibNG is zlib-ng in its zlib-compatible mode: zlib's API (what nginx's gzip module
	// calls) over SIMD deflate. A lock holds it instead of zlib.
	ZlibNG = "zlib_ng"
	PCRE2  = "pcre2"
	// OpenSSL is the default TLS library.
	OpenSSL = "openssl"
	// AWSLC is AWS-LC, the other TLS library: BoringSSL-derived, with formally verified
	// X25519/P-256 assembly. A lock holds it instead of OpenSSL; nginx supports it from
	// MinNginxForAWSLC.
	AWSLC = "aws_lc"
	Nginx = "nginx"
)

// ComponentOrder is the order the core components are built in and written in. A lock has
// nginx, PCRE2, one TLS library (TLSLibraries) and one zlib (ZlibLibraries); code that needs
// one of those may rely on that (MustComponent, TLS, ZlibLibrary).
var ComponentOrder = namesWhere(func(s Spec) bool { return !s.Optional })

// TLSLibraries are the TLS libraries a lock may build nginx with, the default first; a lock
// holds exactly one of them.
var TLSLibraries = namesWhere(func(s Spec) bool { return s.Kind == KindTLS })

// ZlibLibraries are the zlib implementations a lock may build nginx with, the default
// first; a lock holds exactly one of them.
var ZlibLibraries = namesWhere(func(s Spec) bool { return s.Kind == KindZlib })

// MinNginxForAWSLC is the first nginx release that builds with AWS-LC (nginx pull requests
// 800 and 848; the 1.30 stable branch has it).
const MinNginxForAWSLC = "1.29.2"

// FlagName is a component's name as flags and tags spell it (aws_lc is "aws-lc"): component
// names use underscores because stage names become DEP_<NAME> variables.
func FlagName(component string) string { return strings.ReplaceAll(component, "_", "-") }

// ComponentName is FlagName's inverse: the component a flag's library name means.
func ComponentName(flagName string) string { return strings.ReplaceAll(flagName, "-", "_") }

// TLS is the lock's TLS library component (Validate guarantees there is exactly one).
func (l *Lock) TLS() Component { return l.MustComponent(l.oneOf(TLSLibraries)) }

// ZlibLibrary is the lock's zlib component (Validate guarantees there is exactly one).
func (l *Lock) ZlibLibrary() Component { return l.MustComponent(l.oneOf(ZlibLibraries)) }

func (l *Lock) oneOf(names []string) string {
	for _, n := range names {
		if _, ok := l.Component(n); ok {
			return n
		}
	}
	return names[0]
}

// Optional components: third-party nginx modules and the libraries they need. A lock may
// leave them out; a lock that has a module must have its library (Spec.Requires), and
// the plan compiles a module into nginx only when the lock has it.
const (
	// Brotli is google/brotli, the library ngx_brotli compresses with.
	Brotli = "brotli"
	// NgxBrotli is google/ngx_brotli, the brotli filter and brotli_static modules.
	NgxBrotli = "ngx_brotli"
	// Zstd is facebook/zstd, the library the zstd module compresses with.
	Zstd = "zstd"
	// ZstdNginxModule is the zstd filter and zstd_static modules (tokers/zstd-nginx-module).
	// Underscores, not the project's dashes: stage names become DEP_<NAME> variables.
	ZstdNginxModule = "zstd_nginx_module"
	// Libmaxminddb is maxmind/libmaxminddb, the MaxMind DB reader the geoip2 module links.
	Libmaxminddb = "libmaxminddb"
	// NgxGeoIP2 is leev/ngx_http_geoip2_module, variables from a MaxMind DB (geoip2 {}).
	NgxGeoIP2 = "ngx_http_geoip2_module"
	// ngxEcho is openresty/echo-nginx-module (echo, echo_location...).
	ngxEcho = "echo_nginx_module"
	// ngxFancyindex is aperezdc/ngx-fancyindex, directory listings in HTML (fancyindex).
	ngxFancyindex = "ngx_fancyindex"
)

// optionalOrder is the order optional components are built in and written in (after
// ComponentOrder).
var optionalOrder = namesWhere(func(s Spec) bool { return s.Optional })

// AllComponents is every component name a lock may hold, in build and write order.
func AllComponents() []string {
	return append(append([]string(nil), ComponentOrder...), optionalOrder...)
}

// Lock is the whole lock file.
type Lock struct {
	Schema int `json:"schema"`
	// SourceDateEpoch is the Unix time stamped into everything the build makes (binaries,
	// layer entries, image config), so the same lock gives the same image digest.
	SourceDateEpoch int64       `json:"source_date_epoch"`
	Components      []Component `json:"components"`
	Images          Images      `json:"images"`
	// Profiles are recorded PGO profiles, at most one per platform (see Profile).
	Profiles []Profile `json:"profiles,omitempty"`
}

// Component is one upstream source: a release tarball (URL, SHA256) or a git commit (Git).
type Component struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Track is the update policy read by the upstream package: for nginx a stable branch
	// ("1.26") or "stable"; for OpenSSL a minor ("3.5") or "lts"; otherwise "latest".
	Track  string `json:"track,omitempty"`
	URL    string `json:"url,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Git pins the source by commit instead of by tarball (URL and SHA256 empty): for
	// upstreams whose release archives cannot be checksummed ahead of time and that publish
	// no signatures. The build compiles exactly the pinned tree (see pipeline/gittree).
	Git       *Git       `json:"git,omitempty"`
	Signature *Signature `json:"signature,omitempty"`
	// Unsigned says why a component has no Signature (e.g. "Debian repacks the tarball, so
	// upstream's signature does not cover it"). It is written into the SBOM and the build
	// log, and a component with neither is what UnsignedWithoutReason lists: a published
	// image must not rest on a checksum alone without anyone having said why.
	Unsigned string `json:"unsigned,omitempty"`
}

// Signature is a detached upstream PGP signature and the keys allowed to have made it.
type Signature struct {
	URL string `json:"url"`
	// Fingerprints are full 40-hex-digit primary key fingerprints, upper case.
	Fingerprints []string `json:"fingerprints"`
}

// Git is a source pinned by a git commit of its upstream repository.
type Git struct {
	// Repository is the upstream repository's https URL.
	Repository string `json:"repository"`
	// Tag is the release tag the commit was taken from (for people and the update check;
	// the commit is what is trusted).
	Tag string `json:"tag,omitempty"`
	// Commit is the full commit ID (40 lower-case hex digits).
	Commit string `json:"commit"`
	// Tree is the commit's tree ID: the build verifies that the files it compiles hash to
	// it, whichever way they arrived (a fetch of the commit, or a mirror's archive).
	Tree string `json:"tree"`
}

// Images are the base images of the build.
type Images struct {
	Builder Image `json:"builder"`
	Runtime Image `json:"runtime"`
}

// Image is an image reference with an optional pinned digest. When Digest is set it wins
// over the tag: the tag is kept for humans and for the update check.
type Image struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest,omitempty"`
	// Snapshot, on the builder only, is the moment of the distribution archive the builder
	// installs its packages from, as apt's snapshot option takes it (YYYYMMDDTHHMMSSZ, UTC;
	// see SnapshotLayout): with Digest it pins the toolchain in time, so a build from an
	// older lock installs the older compiler and binutils, not the archive's newest.
	Snapshot string `json:"snapshot,omitempty"`
}

// Pinned returns "ref@digest" when a digest is pinned, else the ref itself.
func (i Image) Pinned() string {
	if i.Digest == "" {
		return i.Ref
	}
	base := i.Ref
	if at := strings.Index(base, "@"); at >= 0 {
		base = base[:at]
	}
	return base + "@" + i.Digest
}

// FileName is the name the tarball is stored and mirrored under: the last element of its URL,
// or for a git source "<repository name>-<version>-git.tar.gz" (the archive of its tree).
func (c Component) FileName() string {
	if c.Git != nil {
		return strings.TrimSuffix(path.Base(mustPath(c.Git.Repository)), ".git") + "-" + c.Version + "-git.tar.gz"
	}
	return path.Base(mustPath(c.URL))
}

// Pin is what identifies the component's verified content, as builds and records print it:
// "sha256:<hex>" for a tarball, "git-tree:<hex>" for a git source.
func (c Component) Pin() string {
	if c.Git != nil {
		return "git-tree:" + c.Git.Tree
	}
	return "sha256:" + c.SHA256
}

// SignatureFileName is the name of the detached signature, or "" when there is none.
func (c Component) SignatureFileName() string {
	if c.Signature == nil {
		return ""
	}
	return path.Base(mustPath(c.Signature.URL))
}

func mustPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Path == "" {
		return raw
	}
	return u.Path
}

// Component returns the named component.
func (l *Lock) Component(name string) (Component, bool) {
	for _, c := range l.Components {
		if c.Name == name {
			return c, true
		}
	}
	return Component{}, false
}

// HasComponents reports whether the lock has every one of the named components.
func (l *Lock) HasComponents(names ...string) bool {
	for _, n := range names {
		if _, ok := l.Component(n); !ok {
			return false
		}
	}
	return true
}

// MustComponent returns the named component; Validate guarantees the required ones
// (ComponentOrder) exist.
func (l *Lock) MustComponent(name string) Component {
	c, ok := l.Component(name)
	if !ok {
		panic(fmt.Sprintf("lock has no component %q (was it validated?)", name))
	}
	return c
}

// SetComponent replaces the component of the same name.
func (l *Lock) SetComponent(c Component) {
	for i := range l.Components {
		if l.Components[i].Name == c.Name {
			l.Components[i] = c
			return
		}
	}
	l.Components = append(l.Components, c)
}

//go:embed stack.lock.json
var defaultLock []byte

// Default returns the lock shipped with the program (pipeline/lock/stack.lock.json).
func Default() *Lock {
	l, err := Parse(defaultLock)
	if err != nil {
		panic("the embedded default lock is invalid: " + err.Error())
	}
	return l
}

// DefaultPath is where the shipped lock lives in a checkout.
const DefaultPath = "pipeline/lock/stack.lock.json"

// AWSLCPath is where the shipped AWS-LC variant's lock lives in a checkout: nginx new enough
// for AWS-LC, AWS-LC and zlib-ng pinned by git commit, PCRE2 as in the default lock.
const AWSLCPath = "pipeline/lock/aws-lc.lock.json"

//go:embed aws-lc.lock.json
var awsLCLock []byte

// Builtin is a lock shipped with the program: its path in a checkout, and the TLS library
// and zlib it builds with.
type Builtin struct {
	Path, TLS, Zlib string
	data            []byte
}

// Builtins are the shipped locks: the default (OpenSSL, zlib) and the AWS-LC variant.
var Builtins = []Builtin{{DefaultPath, OpenSSL, Zlib, defaultLock}, {AWSLCPath, AWSLC, ZlibNG, awsLCLock}}

// Lock parses the built-in copy.
func (b Builtin) Lock() *Lock {
	l, err := Parse(b.data)
	if err != nil {
		panic("the embedded lock " + b.Path + " is invalid: " + err.Error())
	}
	return l
}

// BuiltinAt is the shipped lock whose checkout path is file.
func BuiltinAt(file string) (Builtin, bool) {
	for _, b := range Builtins {
		if b.Path == file {
			return b, true
		}
	}
	return Builtin{}, false
}

// maxSize is the largest lock Load and Parse accept. The shipped lock is a few KB; a file
// past this is not a lock (a tarball or a log given to --lock by mistake), and reading,
// decoding and quoting it in an error would cost memory in proportion to its size.
const maxSize = 1 << 20

// sizeError is a lock over maxSize.
type sizeError struct{ Size int64 }

func (e *sizeError) Error() string {
	return fmt.Sprintf("is over the %d-byte (1 MiB) limit for a lock (%d bytes or more; the shipped lock is a few KB): is it the right file?", maxSize, e.Size)
}

// Load reads and strictly parses a lock file.
func Load(file string) (*Lock, error) {
	l, _, err := LoadBytes(file)
	return l, err
}

// LoadBytes is Load that also returns the file's bytes as read, for a caller that rewrites
// the file and compares (pipeline/upstream's update flow reads the lock once).
func LoadBytes(file string) (*Lock, []byte, error) {
	f, err := safeio.OpenInput(file)
	if err != nil {
		return nil, nil, fmt.Errorf("reading lock file %q: %w", file, err)
	}
	defer f.Close()
	// One byte past the limit is enough to know it is too big.
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading lock file %q: %w", file, err)
	}
	if len(b) > maxSize {
		size := int64(len(b))
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		return nil, nil, fmt.Errorf("lock file %q %w", file, &sizeError{size})
	}
	l, err := Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("lock file %q: %w", file, err)
	}
	return l, b, nil
}

// Parse strictly decodes and validates a lock. Unknown fields and trailing data are errors.
func Parse(b []byte) (*Lock, error) {
	if len(b) > maxSize {
		return nil, fmt.Errorf("the lock %w", &sizeError{int64(len(b))})
	}
	if err := notAnObject(b); err != nil {
		return nil, err
	}
	if err := strictJSON(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("parsing: %w (fix the JSON; field names are listed in %s)", err, DefaultPath)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("parsing: trailing data after the lock object")
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if err := emptyUnsigned(b); err != nil {
		return nil, err
	}
	return &l, nil
}

// notAnObject says in plain words what a lock that is not a JSON object is: decoded, `null`
// gives an all-zero lock, whose first complaint ("schema: is 0") explains nothing.
func notAnObject(b []byte) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return errors.New("the lock is empty: it must be a JSON object like " + DefaultPath)
	}
	var what string
	switch c := t[0]; {
	case c == '{':
		return nil
	case bytes.HasPrefix(t, []byte("null")):
		what = "null"
	case c == '[':
		what = "a JSON array"
	case c == '"':
		what = "a JSON string"
	case bytes.HasPrefix(t, []byte("true")), bytes.HasPrefix(t, []byte("false")):
		what = "a JSON boolean"
	case c == '-' || (c >= '0' && c <= '9'):
		what = "a JSON number"
	default:
		what = "not JSON"
	}
	return fmt.Errorf("the lock is %s: it must be a JSON object ({\"schema\": %d, \"components\": [...], ...}) like %s", what, schemaVersion, DefaultPath)
}

// emptyUnsigned reports an "unsigned" field that is present but empty: decoded, it is the
// same as no field at all, and an empty reason must not pass for one that was never given.
func emptyUnsigned(b []byte) error {
	var raw struct {
		Components []map[string]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("parsing: %w", err)
	}
	for i, c := range raw.Components {
		r, ok := c["unsigned"]
		if !ok {
			continue
		}
		var reason string
		if err := json.Unmarshal(r, &reason); err == nil && reason == "" {
			var name string
			json.Unmarshal(c["name"], &name)
			return &fieldError{fmt.Sprintf("components[%d] (%s).unsigned", i, name), unsignedEmpty}
		}
	}
	return nil
}

const unsignedEmpty = "is empty: say why the component has no signature (e.g. \"upstream publishes no signatures\"), or drop the field"

// UnsignedWithoutReason lists, in build order, the components that have neither a signature
// nor an "unsigned" reason. A build that publishes refuses to go on while it is not empty.
func (l *Lock) UnsignedWithoutReason() []string {
	var out []string
	for _, name := range AllComponents() {
		if c, ok := l.Component(name); ok && c.Signature == nil && c.Unsigned == "" {
			out = append(out, name)
		}
	}
	return out
}

// Marshal writes the lock in its stable form: components in build order, two-space
// indentation, a final newline. Tools that rewrite the lock use this, so diffs stay minimal.
func (l *Lock) Marshal() ([]byte, error) {
	out := *l
	out.Components = nil
	for _, name := range AllComponents() {
		if c, ok := l.Component(name); ok {
			out.Components = append(out.Components, c)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&out); err != nil {
		return nil, fmt.Errorf("encoding lock: %w", err)
	}
	return buf.Bytes(), nil
}

// Write validates and atomically replaces file with the stable form of l (safeio.ReplaceFile: never
// through a symbolic link, the file's mode kept).
func (l *Lock) Write(file string) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("refusing to write invalid lock %q: %w", file, err)
	}
	b, err := l.Marshal()
	if err != nil {
		return err
	}
	if err := safeio.ReplaceFile(file, b, 0o644); err != nil {
		return fmt.Errorf("writing lock %q: %w", file, err)
	}
	return nil
}
