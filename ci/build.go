package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/nginx-forge/nginx-forge/pipeline/actions"
	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// buildFlags are build's flags, kept in a struct so tests can call runBuild directly.
type buildFlags struct {
	engine    engineName
	tree      string // install tree directory (--tree)
	output    string // image: OCI layout directory or .tar (--output)
	lockFile  string // --lock; "" when not given (lockPath)
	tls       string // --tls: the TLS library (chooses a shipped lock without --lock)
	zlib      string // --zlib
	mirror    string
	keyserver string
	cpu       string
	jobs      int
	optimize  string
	platform  platformsFlag
	modules   string
	cache     string
	maxSource int64 // MiB
	verbose   bool
	quiet     bool

	image        string // REPO[:TAG[,TAG...]]
	push         bool
	digestOnly   bool
	latest       bool
	noSmoke      bool
	insecure     bool
	bundle       bool
	builderImage string
	runtimeImage string
	revision     string
	ref          string
	sourceRepo   string       // --source-repository
	origin       originSource // where readOrigin looks; the zero value is realOrigin
	signKey      string
	registryWait time.Duration // --registry-timeout
	accept       string        // --accept-advisory: CVE IDs, comma-separated
	sourceWait   time.Duration // --source-timeout
	fetchWait    time.Duration // --fetch-timeout
}

// buildHelp is `ci build --help`.
const buildHelp = `Build nginx, OpenSSL, PCRE2 and zlib pinned by the lock file, put the result on the
lock's distroless runtime image, smoke-test the image, and write or publish it.

Every source is downloaded (or taken from the cache) and verified against the lock's
SHA-256 and PGP signers before anything is compiled; a malformed lock or a tampered file
stops the build before anything is built or created. The build runs in stages (zlib,
pcre2, openssl, nginx), each cached by a hash of everything it depends on, so a second
build with nothing changed takes seconds and an nginx-only change does not rebuild OpenSSL.

What comes out:
  --tree DIR      the install tree (usr/sbin/nginx, etc/nginx, ...); with --bundle also a
                  systemd unit, sysusers and sysctl files, to copy onto a server (bare metal)
  --output PATH   the image as an OCI layout directory, or a tarball if PATH ends in .tar
                  (docker load / podman load); the SBOM also as PATH.spdx.json
  --push          push to --image's repository by digest, smoke-test exactly that digest,
                  attach the SBOM (an OCI referrer), and only then move the tags: those in
                  --image, else the nginx version and the full stack version (and latest
                  with --latest); --digest-only moves none (per-architecture CI jobs, which
                  'ci manifest' joins). Prints REPO@sha256:... and, in GitHub Actions, sets
                  the step outputs digest, image and tags.
Without --tree, --output or --push the image is built and smoke-tested only (a pull
request check). With only --tree no image is assembled.

Several platforms (--platform linux/amd64,linux/arm64, Dagger engine): one build per
platform, each image pushed by digest and smoke-tested, then one multi-platform index pushed
by digest and tagged.

The smoke tests (see 'ci smoke --help') run in runc on this machine with --engine host (root,
runc and umoci needed) and as a Dagger service with --engine dagger. A pushed image is always
smoke-tested; --no-smoke skips them for --output/--tree only.

Engines:
  dagger   build in containers on a Dagger engine (the lock's builder image)
  host     build on this machine with its compiler (needs build-essential perl libcrypt-dev)

Before anything is fetched the build refuses a runtime image whose glibc is older than the
builder's (the binary would fail at start with "GLIBC_2.xx not found").

Advisories: before anything is fetched the build prints each nginx and OpenSSL security
advisory that affects a version the lock pins (the reviewed snapshot
pipeline/advisory/advisories.json, built into the program): CVE, severity and the fixed
release on the component's track. --push refuses (exit status 2) a stack with a high or
critical advisory that has a fixed release on its track, unless --accept-advisory names
each such CVE; update the lock instead with 'ci check-updates --write'.

Examples:
  # Build in Dagger, smoke-test, push and tag 1.30.6 and the full stack version; then run it
  # (where podman refuses its default limits, add --ulimit nproc=4096:4096: README.md, Run it)
  go run ./ci build --push --image ghcr.io/owner/nginx
  podman run --read-only --tmpfs /var/cache/nginx:U --tmpfs /run/nginx:U --tmpfs /tmp:U \
    --ulimit nofile=10240:10240 -p 8080:8080 ghcr.io/owner/nginx:1.30

  # Offline (README.md: Offline quick start): a stand-in base from this machine's Debian
  # mirror, then a build of the test twin lock, whose sources .ci/fetch-sources takes from
  # Debian's source packages and serves as the mirror on 127.0.0.1:8000
  go run ./ci base --mirror "$(go run ./pipeline/testsupport/testenv/debianmirror)" --output /tmp/base
  sudo go run ./ci build --engine host --lock pipeline/lock/testdata/stack.twin.lock.json --mirror http://127.0.0.1:8000 --runtime-image oci:/tmp/base --output /tmp/nginx.tar

  # Build on this machine into an OCI tarball, as a normal user (cache in
  # $XDG_CACHE_HOME/nginx-forge); with sudo and without --no-smoke, smoke-tested in runc
  go run ./ci build --engine host --no-smoke --output nginx.tar

  # Bare metal: an install tree for this machine's CPU, with a systemd unit
  go run ./ci build --engine host --cpu native --no-smoke --tree /tmp/tree --bundle

  # From a mirror holding the lock's files under their upstream names (the shipped lock's
  # files: a mirror made by .ci/fetch-sources holds the twin's, as above)
  go run ./ci build --engine host --mirror http://127.0.0.1:8000 --tree /tmp/tree`

func init() {
	register(&command{
		name:    "build",
		summary: "Build the image from the lock, smoke-test it, and write or publish it",
		usage:   "[--push --image REPO[:TAG,...]] [--output PATH] [--tree DIR] [flags]",
		long:    buildHelp,
		checked: func(fs *flag.FlagSet) (func() error, func(context.Context, io.Writer, io.Writer) error) {
			f := declareBuildFlags(fs)
			check := func() error {
				if err := f.checkRegistryTimeout(); err != nil {
					return err
				}
				_, err := f.resolve()
				return err
			}
			return check, func(ctx context.Context, stdout, stderr io.Writer) error {
				if err := f.checkRegistryTimeout(); err != nil {
					return err
				}
				return runBuild(ctx, *f, stdout, stderr)
			}
		},
	})
}

// declareBuildFlags declares build's flags on fs; they fill the returned flags when fs parses.
func declareBuildFlags(fs *flag.FlagSet) *buildFlags {
	var f buildFlags
	f.stackFlags(fs)
	fs.StringVar(&f.tree, "tree", "", "write the install tree to `DIR` (must be new or empty)")
	fs.StringVar(&f.output, "output", "", "write the image to `PATH`: an OCI layout directory, or a tarball if it ends in .tar")
	fs.StringVar(&f.optimize, "optimize", plan.DefaultOptimize, "optimization `mode`: "+strings.Join(plan.OptimizeModes, ", ")+" (auto: pgo when the lock records a PGO profile for this build (ci pgo-profile), else none; lto: link-time optimization of nginx with OpenSSL, PCRE2, zlib (AWS-LC, PCRE2, zlib-ng with --tls aws-lc --zlib zlib-ng); pgo: lto plus a profile of OpenSSL and nginx (of zlib-ng, PCRE2, AWS-LC and nginx with AWS-LC): the lock's recorded one, else trained on loopback during this build, which is then not reproducible)")
	fs.BoolVar(&f.verbose, "v", false, "verbose: show downloads, verification, registry steps and the smoke table")
	fs.BoolVar(&f.quiet, "q", false, "quiet: no \"still running\" line every 15 s while a step (a download, a compile, a push) runs")
	fs.StringVar(&f.image, "image", "", "`REPO[:TAG[,TAG...]]` to publish to (with --push) and to name --output's tarball")
	fs.BoolVar(&f.push, "push", false, "push by digest, smoke-test that digest, then move the tags")
	fs.BoolVar(&f.digestOnly, "digest-only", false, "with --push: move no tag (print the digest for 'ci manifest')")
	fs.BoolVar(&f.latest, "latest", false, "with --push and default tags: also move the nginx channel (stable or mainline) and latest")
	fs.StringVar(&f.ref, "ref", "", "the git `ref` built (e.g. refs/heads/main, refs/tags/v1.4.0; GitHub's GITHUB_REF): decides the default tags as ci manifest does (docs/tags.md)")
	fs.BoolVar(&f.noSmoke, "no-smoke", false, "skip the smoke tests (refused with --push)")
	fs.BoolVar(&f.insecure, "insecure", false, "allow plain HTTP to registries that are not on loopback")
	fs.BoolVar(&f.bundle, "bundle", false, "with --tree: add a systemd unit, sysusers.d and sysctl.d files for a bare-metal install")
	fs.StringVar(&f.runtimeImage, "runtime-image", "", "base the image on `REF` instead of the lock's runtime image: "+image.SourceSpellings+" (ci base makes one offline)")
	fs.StringVar(&f.revision, "revision", "", "source `revision` (commit) recorded in org.opencontainers.image.revision and the provenance")
	fs.StringVar(&f.sourceRepo, "source-repository", "", "the repository built, as an https `URL` (org.opencontainers.image.source and the provenance's source; default: in GitHub Actions the workflow's repository, else the checkout's origin remote without credentials, else none: no label)")
	durationFlag(fs, &f.registryWait, "registry-timeout", image.DefaultStallTimeout, "1s to 1h", "fail a registry request (the runtime image's pull, the push, the signatures) that moves less than 1 KiB in this `duration` (a registry that went quiet or trickles); a slow transfer that keeps moving is not cut off")
	fs.StringVar(&f.accept, strings.TrimPrefix(forge.AcceptAdvisoryFlag, "--"), "", "with --push: publish although these high or critical advisories (comma-separated `CVE-IDs`) affect the lock and have a fixed release on its track; each must be named, so a new one still refuses the push")
	durationFlag(fs, &f.sourceWait, "source-timeout", source.DefaultStallTimeout, "1s to 1h", "fail a download (a source, a signature, a key) that moves less than 1 KiB in this `duration`, and a git fetch that says nothing for it (a server that never answers, TLS included) or whose transfer does (a server that went quiet, or trickles); a slow transfer that keeps moving is not cut off")
	durationFlag(fs, &f.fetchWait, "fetch-timeout", forge.DefaultFetchTimeout, "1s to 24h", "one `deadline` for fetching, checking and unpacking every source, before anything is built")
	fs.StringVar(&f.signKey, "sign-key", "", "with --push: sign each pushed image and index with this PEM private key `FILE` (cosign.key with COSIGN_PASSWORD, or unencrypted PKCS#8/EC; one key, RSA at least 2048 bits), cosign's way, and attach its SBOM and SLSA provenance as signed attestations (sha256-<digest>.sig, .att; cosign verify and verify-attestation --key PUB --insecure-ignore-tlog=true), before any tag moves")
	return &f
}

// stackFlags declares the flags that choose what is built and where: shared by build and
// pgo-profile, which must train exactly what build builds.
func (f *buildFlags) stackFlags(fs *flag.FlagSet) {
	f.engine = daggerEngine
	fs.Var(&f.engine, "engine", "where to build: dagger or host")
	lockFlag(fs, &f.lockFile, "lock `file`")
	libraryFlags(fs, &f.tls, &f.zlib)
	fs.StringVar(&f.mirror, "mirror", "", "fetch every file as `URL`/<file name> instead of upstream (same checks)")
	fs.StringVar(&f.keyserver, "keyserver", "", "fetch signer keys that are not vendored from these comma-separated `URLs` (default keyserver.ubuntu.com, then keys.openpgp.org)")
	fs.StringVar(&f.cpu, "cpu", "", "CPU `level` to compile for: x86-64-v2, x86-64-v3 (amd64 default), x86-64-v4, armv8.2-a (arm64 default), ..., or native (not portable)")
	fs.IntVar(&f.jobs, "jobs", 0, "parallel compile jobs (0: one per CPU)")
	f.platform = platformsFlag{plan.DefaultPlatform}
	fs.Var(&f.platform, "platform", "target `platforms`: "+plan.SupportedList()+", or several comma-separated, each once (dagger: one build per platform, pushed as one index)")
	fs.StringVar(&f.modules, "modules", "", "nginx `modules`: +name,-name change the default set (e.g. +mail,-http_v3), a plain list replaces it; 'ci modules' lists them")
	fs.StringVar(&f.cache, "cache", "", "cache `DIR`: verified sources (DIR/sources) and the host engine's stage outputs (default: "+host.DefaultCacheDir+" as root, else $XDG_CACHE_HOME/nginx-forge, i.e. ~/.cache/nginx-forge)")
	f.maxSource = source.DefaultMaxSize >> 20
	fs.Var((*mibFlag)(&f.maxSource), "max-source-size", "refuse a download (source tarball, signature, PGO profile) over `MiB` mebibytes (1 to 1048576)")
	fs.StringVar(&f.builderImage, "builder-image", "", "dagger engine: build in `REF` instead of the lock's builder image")
}

// maxSourceMiB is the largest --max-source-size: 1 TiB, far past any source tarball.
const maxSourceMiB = 1 << 20

// mibFlag is --max-source-size: a number of MiB from 1 to maxSourceMiB, refused when parsed
// (forge.Request takes 0 as "the default", and MiB << 20 must not overflow).
type mibFlag int64

func (m *mibFlag) String() string {
	if m == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*m), 10)
}

func (m *mibFlag) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > maxSourceMiB {
		return fmt.Errorf("give a number of MiB from 1 to %d (default %d)", maxSourceMiB, source.DefaultMaxSize>>20)
	}
	*m = mibFlag(n)
	return nil
}

// check refuses what only the command can judge: an engine name, and combinations with the
// engine. The request's own rules are Request.Resolve's (forge), checked there once.
func (f buildFlags) check() error {
	if f.builderImage != "" && f.engine != daggerEngine {
		return usageErrorf("--builder-image applies to --engine dagger; the host engine builds with this machine's compiler")
	}
	return nil
}

// checkRegistryTimeout refuses a --registry-timeout outside 1s .. 1h (forge.CheckRegistryTimeout). It is
// build's own flag (pgo-profile shares the others, through check), so it is checked apart.
func (f buildFlags) checkRegistryTimeout() error {
	if err := forge.CheckRegistryTimeout(f.registryWait); err != nil {
		return usageErrorf("%v", err)
	}
	if err := forge.CheckFetchTimeouts(f.sourceWait, f.fetchWait); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// parseImage splits --image "REPO[:TAG[,TAG...]]"; no tag means the default tags.
func parseImage(s string) (string, []string, error) {
	repo, tagList := s, ""
	if colon := strings.LastIndex(s, ":"); colon > strings.LastIndex(s, "/") {
		repo, tagList = s[:colon], s[colon+1:]
	}
	if _, err := name.NewRepository(repo); err != nil {
		return "", nil, usageErrorf("--image %s: parsing repository %s: %v (write REPO[:TAG[,TAG...]], e.g. ghcr.io/owner/nginx)", quoteShort(s), quoteShort(repo), err)
	}
	if tagList == "" && strings.HasSuffix(s, ":") {
		return "", nil, usageErrorf("--image %s: empty tag list after ':'", quoteShort(s))
	}
	var tags []string
	if tagList != "" {
		for _, t := range strings.Split(tagList, ",") {
			t = strings.TrimSpace(t)
			if err := image.CheckTag(t); err != nil {
				return "", nil, usageErrorf("--image %s: tag %v", quoteShort(s), err)
			}
			if _, err := name.NewTag(repo + ":" + t); err != nil {
				return "", nil, usageErrorf("--image %s: tag %q: %v", quoteShort(s), t, err)
			}
			tags = append(tags, t)
		}
	}
	return repo, tags, nil
}

// quoteShort quotes s for a message, cut to 120 bytes (a flag's value can be long).
func quoteShort(s string) string {
	if len(s) > 120 {
		return fmt.Sprintf("%q... (%d bytes)", s[:120], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// forgeRun is forge.Run; the tests of what the command line asks for stop there.
var forgeRun = forge.Run

func runBuild(ctx context.Context, f buildFlags, stdout, stderr io.Writer) error {
	rs, err := f.resolve()
	if err != nil {
		return err
	}
	// One Actions reporter: the annotations and step outputs of this run, when it runs in
	// GitHub Actions (nothing otherwise).
	gha := actions.New(actions.WithWriter(stderr))
	inActions := gha.InActions()
	sink, closeGroups := newLog(stderr, f.verbose, inActions)
	defer closeGroups()
	if !f.quiet {
		defer sink.heartbeat()()
	}
	eng, err := newEngine(engineConfig{name: f.engine, cache: f.cache, jobs: f.jobs, sink: sink, verbose: f.verbose})
	if err != nil {
		return err
	}
	res, err := forgeRun(ctx, eng, rs, forge.WithProgress(sink), forge.WithBranchWarnings(branchWarnings))
	closeGroups()
	if inActions && res != nil {
		for _, w := range res.Warnings {
			gha.Warningf("%s", w)
		}
	}
	if err != nil || res.Published == nil {
		return err
	}
	// Standard output carries only the digest reference (for scripts); in GitHub Actions the
	// step outputs (digest, image, tags) are set as well.
	fmt.Fprintln(stdout, res.Published.Digest.String())
	if inActions {
		var tags []string
		for _, t := range res.Published.Tags {
			tags = append(tags, t.String())
		}
		return gha.ImageOutputs(ctx, actions.ImageResult{Image: res.Repo, Digest: res.Published.Digest.DigestStr(), Tags: tags})
	}
	return nil
}

// request is the build the flags ask for: the flags' syntax (lists, --image) is read here,
// once; what the request means is checked by Request.Resolve.
func (f buildFlags) request() (forge.Request, error) {
	if err := f.check(); err != nil {
		return forge.Request{}, err
	}
	req := forge.Request{
		Engine: string(f.engine), LockFile: f.lockFile, TLS: f.tls, Zlib: f.zlib, BuilderImage: f.builderImage, RuntimeImage: f.runtimeImage,
		Platforms: f.platform, CPU: f.cpu, Jobs: f.jobs, Optimize: f.optimize, Mirror: f.mirror, CacheDir: f.cache,
		Tree: f.tree, Bundle: f.bundle, Output: f.output,
		Push: f.push, DigestOnly: f.digestOnly, Latest: f.latest, NoSmoke: f.noSmoke, Insecure: f.insecure,
		Revision: f.revision, Ref: f.ref, SignKey: f.signKey, MaxSourceSize: f.maxSource << 20,
		RegistryTimeout: f.registryWait, AcceptAdvisories: splitList(f.accept), SourceTimeout: f.sourceWait, FetchTimeout: f.fetchWait,
	}
	src := f.origin
	if src.getenv == nil {
		src = realOrigin
	}
	var err error
	if req.Origin, err = readOrigin(f.sourceRepo, f.ref, src); err != nil {
		return forge.Request{}, err
	}
	if f.modules != "" {
		req.Modules = strings.Split(f.modules, ",") // as dockerfile: ",,," is refused, not the default set
	}
	if f.keyserver != "" {
		req.Keyservers = splitList(f.keyserver)
	}
	if f.image != "" {
		if req.Repo, req.Tags, err = parseImage(f.image); err != nil {
			return forge.Request{}, err
		}
	}
	return req, nil
}

// resolve is the request, resolved once (forge.Request.Resolve: every rule, before anything
// is fetched or built); its refusal is a *forge.RequestError, a usage error (exit status 2).
func (f buildFlags) resolve() (*forge.Resolved, error) {
	req, err := f.request()
	if err != nil {
		return nil, err
	}
	return req.Resolve()
}

// durationFlag is fs.DurationVar whose refusal says the accepted range: the flag package's
// own says only "parse error" of a value too large for a duration (9999999999999h).
func durationFlag(fs *flag.FlagSet, d *time.Duration, name string, def time.Duration, accepted, usage string) {
	*d = def
	fs.Var(rangedDuration{d, accepted}, name, usage)
}

type rangedDuration struct {
	d        *time.Duration
	accepted string
}

func (r rangedDuration) String() string {
	if r.d == nil {
		return ""
	}
	return r.d.String()
}

func (r rangedDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration, or too large for one: give a duration from %s (e.g. 30s, 5m)", r.accepted)
	}
	*r.d = d
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// branchWarnings is what a push warns about the lock's branches today (pipeline/upstream's
// calendar of nginx and OpenSSL support).
func branchWarnings(l *lock.Lock) []string { return upstream.BranchWarnings(l, time.Now()) }

// libraryFlags declares --tls and --zlib, the same for every command that resolves a lock.
func libraryFlags(fs *flag.FlagSet, tls, zlib *string) {
	fs.StringVar(tls, "tls", "", "TLS `library`: "+strings.Join(forge.TLSChoices, " or ")+" (default: the lock's); without --lock, aws-lc uses the shipped "+lock.AWSLCPath+" (nginx 1.30 with AWS-LC and zlib-ng)")
	fs.StringVar(zlib, "zlib", "", "zlib `implementation`: "+strings.Join(forge.ZlibChoices, " or ")+" (default: the lock's); without --lock, zlib-ng uses the shipped "+lock.AWSLCPath)
}

// lockFlag declares --lock on fs into p, which stays "" when the command line gives none: an
// explicit --lock is always the lock used, whatever its spelling (--lock
// pipeline/lock/stack.lock.json with --tls aws-lc is refused, not swapped for the shipped
// variant lock); only without one do --tls and --zlib choose a shipped lock
// (forge.Request.LockFile).
func lockFlag(fs *flag.FlagSet, p *string, usage string) {
	fs.StringVar(p, "lock", "", usage+" (default "+lock.DefaultPath+", or the lock built into this program when that file is absent; without --lock, --tls and --zlib choose the shipped lock that has them)")
}

// lockPath is --lock's file: the one given, else lock.DefaultPath.
func lockPath(given string) string {
	if given == "" {
		return lock.DefaultPath
	}
	return given
}

// newLibraryFlags is libraryFlags into new variables.
func newLibraryFlags(fs *flag.FlagSet) (tls, zlib *string) {
	tls, zlib = new(string), new(string)
	libraryFlags(fs, tls, zlib)
	return tls, zlib
}
