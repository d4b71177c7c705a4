package forge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// SmokeRequest is `ci smoke`: the suite against an image (Image, run by the runner the command
// chooses) or against a server over the network (Address), compared with what it should be.
type SmokeRequest struct {
	// Image is the image reference (tag or digest) to pull once and test.
	Image    string
	Insecure bool // a plain-HTTP registry not on loopback

	// Address is the server's host; Start, when set, is the command to start first (the
	// image's entrypoint), whose processes, output and writes to WatchRoot are checked too.
	Address    string
	Start      []string
	WatchRoot  string
	TLSCAFile  string // the server's certificate (PEM) to trust; "" skips the TLS checks
	ServerName string // the TLS server name to ask for and verify
	UID        int    // the uid every server process must run as (0: the default)
	HTTPPort   int    // 0: the default
	HTTPSPort  int    // 0: the default

	// ExpectLock is a lock whose nginx, OpenSSL and PCRE2 versions the target must have
	// ("": the versions an image records, else not compared).
	ExpectLock string
	// Modules are the nginx modules the target was built with, as `build --modules` takes
	// them ("": an image's record, else the default set; "any": not compared).
	Modules string
	// ExpectFlags are the configure flags of the modules (Address only; instead of Modules).
	ExpectFlags []string
}

// ResolvedSmoke is a SmokeRequest resolved once (SmokeRequest.Resolve): the expectation lock
// loaded, what the flags expect made from it, the CA read. SmokeServer and PrepareImageSmoke
// take it and read none of them again; the image's plan is made once, after its pull.
type ResolvedSmoke struct {
	req SmokeRequest
	// lock is ExpectLock's, or the lock built into the program.
	lock   *lock.Lock
	expect smoke.Expect
	tls    *smoke.TLS // nil: no --tls-ca
}

// Request is the request as it was resolved.
func (rs *ResolvedSmoke) Request() SmokeRequest { return rs.req }

// The smoke command loads its lock and makes its plan through these, so a test can count
// them (one of each per run at most).
var (
	loadSmokeLock = func(path string) (*lock.Lock, error) {
		if path == "" {
			return lock.Default(), nil
		}
		return lock.Load(path)
	}
	newSmokePlan = plan.New
)

// Resolve checks the request without touching a registry or a server (which target, the
// numbers, the expectation lock, the module list, the CA) and reads what it names, once. The
// command reports its errors as usage errors.
func (r SmokeRequest) Resolve() (*ResolvedSmoke, error) {
	switch {
	case r.Image != "" && r.Address != "":
		return nil, errors.New("--image and --address exclude each other")
	case r.Image == "" && r.Address == "":
		return nil, errors.New("--image is required (or --address for a running server)")
	}
	if err := r.checkNumbers(); err != nil {
		return nil, err
	}
	l, err := loadSmokeLock(r.ExpectLock)
	if err != nil {
		return nil, fmt.Errorf("--expect-lock: loading %s: %w", r.ExpectLock, err)
	}
	rs := &ResolvedSmoke{req: r, lock: l}
	if rs.expect, err = r.expectations(l); err != nil {
		return nil, err
	}
	if r.TLSCAFile != "" {
		if rs.tls, err = r.trustedTLS(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// checkNumbers refuses a port or uid outside its range (0 is the default of each).
func (r SmokeRequest) checkNumbers() error {
	for _, p := range []struct {
		flag string
		v    int
		def  int
	}{{"--" + smoke.FlagHTTPPort, r.HTTPPort, 8080}, {"--" + smoke.FlagHTTPSPort, r.HTTPSPort, 8443}} {
		if p.v < 0 || p.v > 65535 {
			return fmt.Errorf("%s %d: give a TCP port from 1 to 65535 (default %d)", p.flag, p.v, p.def)
		}
	}
	if r.UID < 0 || int64(r.UID) > maxUID {
		return fmt.Errorf("--%s %d: give a uid from 1 to %d (default 65532, the image's user)", smoke.FlagUID, r.UID, int64(maxUID))
	}
	return nil
}

// maxUID is the largest uid Linux gives (2^32-2; 2^32-1 is the "no uid" of setuid(2)).
const maxUID = 1<<32 - 2

// trustedTLS reads TLSCAFile: the certificate to trust for ServerName.
func (r SmokeRequest) trustedTLS() (*smoke.TLS, error) {
	pemBytes, err := safeio.ReadInput(r.TLSCAFile, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	t, err := smoke.TrustTLS(pemBytes, r.ServerName)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca %s: %w", r.TLSCAFile, err)
	}
	return t, nil
}

// Expectations are what the target is compared with when it records nothing: ExpectLock's
// versions (when given) and the Modules' configure flags, as build compiles them from its lock.
func (rs *ResolvedSmoke) Expectations() smoke.Expect { return rs.expect }

// expectations are Expectations, made from l (ExpectLock's, or the lock built into the
// program).
func (r SmokeRequest) expectations(l *lock.Lock) (smoke.Expect, error) {
	var mods []string
	if r.Modules != "" && r.Modules != "any" {
		for _, m := range strings.Split(r.Modules, ",") {
			if m = strings.TrimSpace(m); m != "" {
				mods = append(mods, m)
			}
		}
	}
	e, err := expectFor(l, mods)
	if err != nil {
		return smoke.Expect{}, fmt.Errorf("--modules: %w", err)
	}
	if r.ExpectLock == "" {
		// Without a lock the versions are reported, not compared.
		e.Nginx, e.OpenSSL, e.AWSLC, e.PCRE2 = "", "", "", ""
	}
	if r.Modules == "any" {
		e.Modules = nil
	}
	return e, nil
}

// SmokeServer runs the suite against the server at the request's Address (starting its
// Start first, if given); sink receives each check as it ends (nil discards).
func SmokeServer(ctx context.Context, rs *ResolvedSmoke, sink progress.Sink) (smoke.Report, error) {
	r, expect := rs.req, rs.expect
	if r.ExpectFlags != nil {
		expect.Modules = r.ExpectFlags
	}
	o := smoke.Options{Expect: expect, UID: r.UID, HTTPPort: r.HTTPPort, HTTPSPort: r.HTTPSPort, Progress: sink, TLS: rs.tls}
	return smoke.RunClient(ctx, smoke.ClientRequest{Address: r.Address, WatchRoot: r.WatchRoot, Start: r.Start}, o)
}

// ImageSmoke is an image pulled for the suite with what it is compared with: hand Plan,
// Image and Options to an engine's Smoke.
type ImageSmoke struct {
	Image  v1.Image
	Digest string
	// Plan is the expectation lock's plan (--expect-lock's, else the lock built into the
	// program) for the image's own platform: what an engine needs to run an image it did not
	// build (its runtime contract; the Dagger engine builds its in-engine smoke client with
	// the plan's builder image).
	Plan    *plan.Plan
	Options smoke.Options
	// From says where the expectations came from, for the report's title.
	From string
}

// PrepareImageSmoke pulls r.Image once (the expectations are read from exactly the image
// that is then run) with the registry credentials every access uses, and decides the
// expectations: the image's own record (its annotations: component versions, modules) comes
// first, so an image is checked against what it was built as; ExpectLock replaces the
// versions, Modules the modules. An image without a record (built by the Dockerfile, or
// elsewhere) is checked against the lock's default modules, versions only with ExpectLock.
func PrepareImageSmoke(ctx context.Context, rs *ResolvedSmoke) (*ImageSmoke, error) {
	r := rs.req
	var nopts []name.Option
	if r.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	src, err := image.ParseSource(r.Image, nopts...)
	if err != nil {
		return nil, fmt.Errorf("--image: %w", err)
	}
	img, err := src.Image(ctx, nil, remote.WithContext(ctx), remote.WithAuthFromKeychain(image.Keychain()))
	if err != nil {
		verb := "pulling"
		if src.Local() {
			verb = "reading"
		}
		return nil, fmt.Errorf("%s image %s: %w", verb, r.Image, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", r.Image, err)
	}
	expect, from, err := rs.ImageExpectations(img)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: reading its config: %w", r.Image, err)
	}
	// The plan of the lock already read (--expect-lock's, else the program's own) for the
	// image's platform: the runtime contract, and the builder the Dagger engine builds its
	// smoke client in.
	p, err := newSmokePlan(rs.lock, plan.WithPlatform(plan.Platform{OS: cfg.OS, Arch: cfg.Architecture}))
	if err != nil {
		return nil, fmt.Errorf("image %s: its platform %s/%s: %w", r.Image, cfg.OS, cfg.Architecture, err)
	}
	return &ImageSmoke{Image: img, Digest: digest.String(), Plan: p, Options: smoke.Options{Expect: expect}, From: from}, nil
}

// ImageExpectations are what img is compared with (see PrepareImageSmoke), and where they
// came from.
func (rs *ResolvedSmoke) ImageExpectations(img v1.Image) (smoke.Expect, string, error) {
	e, from, err := rs.imageExpectations(img)
	if err != nil {
		return e, from, err
	}
	// The binary must be built for the architecture the image says it is for.
	cf, err := img.ConfigFile()
	if err != nil {
		return smoke.Expect{}, "", fmt.Errorf("--image: reading its config: %w", err)
	}
	e.Arch = cf.Architecture
	return e, from, nil
}

func (rs *ResolvedSmoke) imageExpectations(img v1.Image) (smoke.Expect, string, error) {
	r, flagExpect := rs.req, rs.expect
	rec, ok, err := image.ReadRecord(img)
	if err != nil {
		return smoke.Expect{}, "", err
	}
	if !ok {
		from := "the default module set (the image records no build)"
		if r.ExpectLock != "" {
			from = r.ExpectLock + " (the image records no build)"
		}
		return flagExpect, from, nil
	}
	e, err := expectRecorded(rec)
	if err != nil {
		return smoke.Expect{}, "", fmt.Errorf("--image: %w", err)
	}
	from := "the image's record"
	if r.ExpectLock != "" {
		e.Nginx, e.OpenSSL, e.AWSLC, e.PCRE2 = flagExpect.Nginx, flagExpect.OpenSSL, flagExpect.AWSLC, flagExpect.PCRE2
		from += ", versions compared with " + r.ExpectLock
	}
	if r.Modules != "" {
		e.Modules = flagExpect.Modules
		from += ", modules from --modules"
	}
	return e, from, nil
}
