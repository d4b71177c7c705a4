package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/actions"
	"github.com/nginx-forge/nginx-forge/pipeline/bundle"
	"github.com/nginx-forge/nginx-forge/pipeline/dagger"
	"github.com/nginx-forge/nginx-forge/pipeline/host"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// buildFlags are build's flags, kept in a struct so tests can call runBuild directly.
type buildFlags struct {
	engine   string
	tree     string // install tree directory (--tree)
	output   string // image: OCI layout directory or .tar (--output)
	lockFile string
	mirror   string
	cpu      string
	jobs     int
	platform string
	modules  string
	cache    string
	verbose  bool

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
}

func init() {
	register(&command{
		name:    "build",
		summary: "Build the image from the lock, smoke-test it, and write or publish it",
		usage:   "[--push --image REPO[:TAG,...]] [--output PATH] [--tree DIR] [flags]",
		long: `Build nginx, OpenSSL, PCRE2 and zlib pinned by the lock file, put the result on the
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

Examples:
  # Build in Dagger, smoke-test, push and tag 1.26.2 and the full stack version
  go run ./ci build --push --image ghcr.io/OWNER/nginx

  # Build on this machine into an OCI tarball, smoke-tested in runc
  sudo go run ./ci build --engine host --output nginx.tar

  # Bare metal: an install tree for this machine's CPU, with a systemd unit
  go run ./ci build --engine host --cpu native --no-smoke --tree out/tree --bundle

  # From a mirror holding the lock's files under their upstream names
  go run ./ci build --engine host --mirror http://127.0.0.1:8000 --tree out/tree`,
		flags: func(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
			var f buildFlags
			fs.StringVar(&f.engine, "engine", "dagger", "where to build: dagger or host")
			fs.StringVar(&f.tree, "tree", "", "write the install tree to `DIR` (must be new or empty)")
			fs.StringVar(&f.output, "output", "", "write the image to `PATH`: an OCI layout directory, or a tarball if it ends in .tar")
			fs.StringVar(&f.lockFile, "lock", lock.DefaultPath, "lock `file` (when the default is absent, the lock built into this program)")
			fs.StringVar(&f.mirror, "mirror", "", "fetch every file as `URL`/<file name> instead of upstream (same checks)")
			fs.StringVar(&f.cpu, "cpu", "", "CPU `level` to compile for: x86-64-v2, x86-64-v3 (amd64 default), x86-64-v4, armv8.2-a (arm64 default), ..., or native (not portable)")
			fs.IntVar(&f.jobs, "jobs", 0, "parallel compile jobs (0: one per CPU)")
			fs.StringVar(&f.platform, "platform", "linux/amd64", "target `platforms`: linux/amd64, linux/arm64, or both comma-separated (dagger: one build per platform, pushed as one index)")
			fs.StringVar(&f.modules, "modules", "", "comma-separated nginx `modules` replacing the default set (e.g. http_ssl,http_v2,pcre-jit)")
			fs.StringVar(&f.cache, "cache", host.DefaultCacheDir, "host engine: stage cache `DIR`")
			fs.BoolVar(&f.verbose, "v", false, "verbose: show downloads, verification, registry steps and the smoke table")
			fs.StringVar(&f.image, "image", "", "`REPO[:TAG[,TAG...]]` to publish to (with --push) and to name --output's tarball")
			fs.BoolVar(&f.push, "push", false, "push by digest, smoke-test that digest, then move the tags")
			fs.BoolVar(&f.digestOnly, "digest-only", false, "with --push: move no tag (print the digest for 'ci manifest')")
			fs.BoolVar(&f.latest, "latest", false, "with --push and default tags: also move latest")
			fs.BoolVar(&f.noSmoke, "no-smoke", false, "skip the smoke tests (refused with --push)")
			fs.BoolVar(&f.insecure, "insecure", false, "allow plain HTTP to registries that are not on loopback")
			fs.BoolVar(&f.bundle, "bundle", false, "with --tree: add a systemd unit, sysusers.d and sysctl.d files for a bare-metal install")
			fs.StringVar(&f.builderImage, "builder-image", "", "dagger engine: build in `REF` instead of the lock's builder image")
			fs.StringVar(&f.runtimeImage, "runtime-image", "", "base the image on `REF` instead of the lock's runtime image")
			fs.StringVar(&f.revision, "revision", "", "source `revision` (commit) recorded in org.opencontainers.image.revision")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageErrorf("unexpected arguments: %s", strings.Join(args, " "))
				}
				return runBuild(ctx, f, os.Stdout, os.Stderr)
			}
		},
	})
}

// wantsImage: an image is assembled unless the only output asked for is the install tree.
func (f buildFlags) wantsImage() bool {
	return f.push || f.output != "" || f.image != "" || f.tree == ""
}

func (f buildFlags) check() error {
	if f.engine != "host" && f.engine != "dagger" {
		return usageErrorf("--engine %q: use dagger or host", f.engine)
	}
	if f.push && f.image == "" {
		return usageErrorf("--push needs --image REPO[:TAG,...]: where to publish")
	}
	if f.push && f.noSmoke {
		return usageErrorf("--no-smoke cannot be combined with --push: a pushed image is always smoke-tested before any tag moves")
	}
	if f.digestOnly && !f.push {
		return usageErrorf("--digest-only only makes sense with --push")
	}
	if f.bundle && f.tree == "" {
		return usageErrorf("--bundle needs --tree DIR: the bundle's files are written into the install tree")
	}
	if f.builderImage != "" && f.engine != "dagger" {
		return usageErrorf("--builder-image applies to --engine dagger; the host engine builds with this machine's compiler")
	}
	if f.image != "" {
		repo, tags, err := parseImage(f.image)
		if err != nil {
			return err
		}
		if f.latest && len(tags) > 0 {
			return usageErrorf("--latest adds latest to the default tags; --image %q names its tags: add latest there", f.image)
		}
		if f.digestOnly && len(tags) > 0 {
			return usageErrorf("--digest-only moves no tag, but --image %q names tags: give the repository %s only", f.image, repo)
		}
	}
	if f.tree != "" {
		if err := checkEmptyOrAbsent(f.tree); err != nil {
			return usageErrorf("--tree: %v", err)
		}
	}
	if f.output != "" {
		if _, err := os.Lstat(f.output); err == nil {
			return usageErrorf("--output %s exists: choose a new path or remove it", f.output)
		}
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
		return "", nil, usageErrorf("--image %q: parsing repository %q: %v (write REPO[:TAG[,TAG...]], e.g. ghcr.io/owner/nginx)", s, repo, err)
	}
	if tagList == "" && strings.HasSuffix(s, ":") {
		return "", nil, usageErrorf("--image %q: empty tag list after ':'", s)
	}
	var tags []string
	if tagList != "" {
		for _, t := range strings.Split(tagList, ",") {
			t = strings.TrimSpace(t)
			if _, err := name.NewTag(repo + ":" + t); err != nil || t == "" {
				return "", nil, usageErrorf("--image %q: bad tag %q", s, t)
			}
			tags = append(tags, t)
		}
	}
	return repo, tags, nil
}

// target is one platform's build: its plan, base, and (once built) its image.
type target struct {
	plan     *plan.Plan
	platform v1.Platform
	base     v1.Image
	img      v1.Image
	sbom     []byte
	digest   v1.Hash
}

func runBuild(ctx context.Context, f buildFlags, stdout, stderr io.Writer) error {
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	vlogf := func(string, ...any) {}
	if f.verbose {
		vlogf = logf
	}
	if err := f.check(); err != nil {
		return err
	}
	platforms := splitList(f.platform)
	if len(platforms) == 0 {
		return usageErrorf("--platform is empty: give linux/amd64, linux/arm64 or both, comma-separated")
	}
	if len(platforms) > 1 {
		if f.engine == "host" {
			return usageErrorf("--platform %s: the host engine builds for this machine only; build several platforms with --engine dagger", f.platform)
		}
		if f.output != "" || f.tree != "" {
			return usageErrorf("--platform %s: --output and --tree take one platform; build them one platform at a time", f.platform)
		}
		if f.digestOnly {
			return usageErrorf("--digest-only pushes one platform's image for 'ci manifest'; with several platforms build pushes the index itself")
		}
	}

	l, err := loadLock(f.lockFile, vlogf)
	if err != nil {
		return err
	}
	if err := overrideImages(l, f); err != nil {
		return err
	}
	var targets []*target
	for _, pl := range platforms {
		ff := f
		ff.platform = pl
		p, err := newPlan(l, ff)
		if err != nil {
			return usageErrorf("%v", err)
		}
		targets = append(targets, &target{plan: p, platform: v1.Platform{OS: p.Platform.OS, Architecture: p.Platform.Arch}})
	}
	for _, w := range targets[0].plan.Warnings {
		logf("warning: %s", w)
	}
	for _, c := range l.Components {
		if c.Signature == nil {
			logf("warning: %s %s has no upstream signature in the lock: only its SHA-256 is checked", c.Name, c.Version)
		}
	}
	pubOpts := []image.PublishOption{image.WithKeychain(image.Keychain()), image.WithLogf(vlogf)}
	if f.insecure {
		pubOpts = append(pubOpts, image.WithInsecure())
	}
	runtimeRef := l.Images.Runtime.Pinned()

	// Preflight: what can fail without compiling fails now, before any download.
	var dx *dagger.Executor
	if f.engine == "dagger" {
		if err := dagger.CheckEngine(ctx); err != nil {
			return err
		}
		if f.wantsImage() {
			for _, t := range targets {
				if err := image.CheckBaseGlibc(ctx, t.plan.BuilderImage, runtimeRef, t.platform, remoteOpts(f)...); err != nil {
					return fmt.Errorf("checking the builder and runtime images for %s (nothing was built): %w", t.plan.Platform, err)
				}
			}
		}
		dopts := []dagger.Option{dagger.WithLogf(vlogf)}
		if f.verbose {
			dopts = append(dopts, dagger.WithProgress(stderr))
		}
		dx = dagger.New(dopts...)
		defer dx.Close()
	}
	if f.wantsImage() {
		if f.engine == "host" && !f.noSmoke {
			if err := checkHostSmoke(); err != nil {
				return err
			}
		}
		for _, t := range targets {
			if t.base, err = image.PullBase(ctx, runtimeRef, t.platform, pubOpts...); err != nil {
				return fmt.Errorf("pulling the runtime image %s for %s (nothing was built; --runtime-image overrides it): %w", runtimeRef, t.plan.Platform, err)
			}
			if f.engine == "host" {
				if err := checkHostGlibc(t.base, runtimeRef); err != nil {
					return err
				}
			}
		}
	}

	srcOpts := []source.Option{source.WithLogf(vlogf)}
	if f.mirror != "" {
		srcOpts = append(srcOpts, source.WithMirror(f.mirror))
	}
	start := time.Now()
	verified, err := source.New(srcOpts...).FetchAll(ctx, l)
	if err != nil {
		return fmt.Errorf("fetching sources (nothing was built): %w", err)
	}
	sources := map[string]string{}
	for name, v := range verified {
		sources[name] = v.Path
	}
	logf("sources: %d verified in %s", len(sources), time.Since(start).Round(time.Millisecond))

	for _, t := range targets {
		if err := buildTarget(ctx, f, l, t, dx, sources, logf, stderr); err != nil {
			return err
		}
	}
	if !f.wantsImage() {
		return nil
	}

	var repo string
	var tags []string
	if f.image != "" {
		repo, tags, _ = parseImage(f.image)
	}
	created := time.Unix(l.SourceDateEpoch, 0).UTC()
	if f.output != "" {
		t := targets[0]
		refName := outputRefName(repo, tags, l)
		if err := image.WriteOutput(f.output, t.img, refName, t.sbom, created); err != nil {
			return fmt.Errorf("writing --output %s: %w", f.output, err)
		}
		logf("output: %s (as %s; SBOM %s.spdx.json)", f.output, refName, f.output)
	}

	smokeTable := io.Discard
	if f.verbose {
		smokeTable = stderr
	}
	if !f.push {
		if f.noSmoke {
			logf("smoke: skipped (--no-smoke)")
			return nil
		}
		for _, t := range targets {
			expect := planExpect(l, t.plan)
			var rep smoke.Report
			if f.engine == "host" {
				rep, err = smoke.Image(ctx, t.img, smoke.ImageOptions{Options: smoke.Options{Expect: expect}})
			} else {
				rep, err = dx.Smoke(ctx, t.plan, t.img, smoke.Options{Expect: expect})
			}
			if err != nil {
				return fmt.Errorf("smoke-testing image %s (%s): %w", t.digest, t.plan.Platform, err)
			}
			rep.Print(smokeTable)
			if err := rep.Err(); err != nil {
				if !f.verbose {
					rep.Print(stderr)
				}
				return fmt.Errorf("smoke-testing image %s (%s): %w", t.digest, t.plan.Platform, err)
			}
			logf("smoke: %d checks passed on %s (%s)", countPassed(rep), t.digest, t.plan.Platform)
		}
		return nil
	}

	// Publish: each platform's image by digest, smoke-tested on exactly that digest; then
	// the tags, on the image itself or, for several platforms, on the index of them.
	if len(tags) == 0 && !f.digestOnly {
		tags = image.DefaultTags(l, f.latest)
	}
	imageTags := tags
	if len(targets) > 1 {
		imageTags = nil
	}
	var pub *image.Published
	var digestRefs []string
	for _, t := range targets {
		opts := append(pubOpts[:len(pubOpts):len(pubOpts)], image.WithVerify(verifier(f, l, t, dx, smokeTable)), image.WithSBOM(t.sbom, created))
		if pub, err = image.Publish(ctx, t.img, repo, imageTags, opts...); err != nil {
			return err
		}
		state := "pushed"
		if pub.AlreadyPresent {
			state = "already in the registry"
		}
		logf("push: %s (%s) %s, smoke-tested", pub.Digest, t.plan.Platform, state)
		digestRefs = append(digestRefs, pub.Digest.String())
	}
	if len(targets) > 1 {
		if pub, err = image.Index(ctx, repo, digestRefs, tags, pubOpts...); err != nil {
			return err
		}
		logf("push: index %s of %s", pub.Digest, strings.Join(platforms, ", "))
	}
	var tagRefs []string
	for _, t := range pub.Tags {
		tagRefs = append(tagRefs, t.String())
	}
	logf("push: tags moved to %s: %s", pub.Digest.DigestStr(), listOrNone(tagRefs))
	fmt.Fprintln(stdout, pub.Digest.String())
	// Standard output carries only the digest reference (for scripts); in GitHub Actions the
	// step outputs (digest, image, tags) are set as well.
	if r := actions.New(actions.WithWriter(stderr)); r.InActions() {
		return r.ImageOutputs(actions.ImageResult{Image: repo, Digest: pub.Digest.DigestStr(), Tags: tagRefs})
	}
	return nil
}

// buildTarget builds one platform's install tree with the engine and, when an image is
// wanted, assembles the image and its SBOM.
func buildTarget(ctx context.Context, f buildFlags, l *lock.Lock, t *target, dx *dagger.Executor, sources map[string]string, logf func(string, ...any), stderr io.Writer) error {
	p := t.plan
	var treeDir, libcrypt string
	var err error
	switch f.engine {
	case "host":
		if treeDir, err = runHostBuild(ctx, f, p, sources, logf, stderr); err != nil {
			return err
		}
		if f.wantsImage() {
			libcrypt, err = hostPackageVersion(ctx, plan.LibcryptPackage)
		}
	default:
		treeDir = f.tree
		if treeDir == "" {
			tmp, err := os.MkdirTemp("", "nginx-forge-tree-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			treeDir = tmp
		}
		start := time.Now()
		if err := dx.Run(ctx, p, sources, treeDir); err != nil {
			return err
		}
		logf("build: install tree for %s (cpu %s) built in %s", p.Platform, p.CPU, time.Since(start).Round(time.Second))
		if f.wantsImage() {
			libcrypt, err = dx.PackageVersion(ctx, p, plan.LibcryptPackage)
		}
	}
	if err != nil {
		return err
	}
	if f.tree != "" {
		if f.engine == "host" {
			if err := host.CopyTree(f.tree, treeDir); err != nil {
				return err
			}
		}
		if f.bundle {
			if err := writeBundle(f.tree, logf); err != nil {
				return err
			}
		}
		logf("tree: %s", f.tree)
	}
	if !f.wantsImage() {
		return nil
	}
	imgOpts := []image.Option{image.WithBaseRef(l.Images.Runtime.Pinned()), image.WithLibcrypt(libcrypt)}
	if f.revision != "" {
		imgOpts = append(imgOpts, image.WithRevision(f.revision))
	}
	if t.img, err = image.Assemble(t.base, treeDir, l, imgOpts...); err != nil {
		return fmt.Errorf("assembling the image for %s: %w", p.Platform, err)
	}
	if t.sbom, err = image.SBOM(t.img, l, imgOpts...); err != nil {
		return fmt.Errorf("writing the SBOM for %s: %w", p.Platform, err)
	}
	// Layers are computed now, while the tree (a temporary directory for Dagger) exists.
	if t.digest, err = t.img.Digest(); err != nil {
		return fmt.Errorf("computing the image digest for %s: %w", p.Platform, err)
	}
	size, err := image.SizeOf(t.img)
	if err != nil {
		return fmt.Errorf("measuring the image for %s: %w", p.Platform, err)
	}
	logf("image: %s (%s on %s), %s", t.digest, p.Platform, l.Images.Runtime.Pinned(), size)
	return nil
}

// verifier is the smoke test Publish runs on the pushed digest: in runc here (host engine),
// or as a Dagger service on the image pulled back from the registry.
func verifier(f buildFlags, l *lock.Lock, t *target, dx *dagger.Executor, table io.Writer) image.VerifyFunc {
	expect := planExpect(l, t.plan)
	if f.engine == "host" {
		return smoke.Verify(smoke.ImageOptions{Options: smoke.Options{Expect: expect}, Insecure: f.insecure,
			Remote: remoteOpts(f)}, table)
	}
	return func(ctx context.Context, ref name.Digest) error {
		pushed, err := remote.Image(ref, append(remoteOpts(f), remote.WithContext(ctx))...)
		if err != nil {
			return fmt.Errorf("pulling %s back: %w", ref, err)
		}
		rep, err := dx.Smoke(ctx, t.plan, pushed, smoke.Options{Expect: expect})
		if err != nil {
			return err
		}
		rep.Print(table)
		return rep.Err()
	}
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

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func countPassed(r smoke.Report) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == smoke.Pass {
			n++
		}
	}
	return n
}

// outputRefName names the image inside an --output tarball: --image's first tag, or the
// repository with the nginx version.
func outputRefName(repo string, tags []string, l *lock.Lock) string {
	if repo == "" {
		repo = "nginx-forge"
	}
	if len(tags) == 0 {
		tags = image.DefaultTags(l, false)
	}
	return repo + ":" + tags[0]
}

func remoteOpts(f buildFlags) []remote.Option {
	return []remote.Option{remote.WithAuthFromKeychain(image.Keychain())}
}

// overrideImages applies --builder-image and --runtime-image to the lock ("REF" or
// "REF@sha256:..."), so everything downstream (plan, annotations, SBOM) names what was used.
func overrideImages(l *lock.Lock, f buildFlags) error {
	for _, o := range []struct {
		flag, val string
		dst       *lock.Image
	}{{"--builder-image", f.builderImage, &l.Images.Builder}, {"--runtime-image", f.runtimeImage, &l.Images.Runtime}} {
		if o.val == "" {
			continue
		}
		ref, err := name.ParseReference(o.val)
		if err != nil {
			return usageErrorf("%s %q: parsing reference: %v", o.flag, o.val, err)
		}
		img := lock.Image{Ref: o.val}
		if d, ok := ref.(name.Digest); ok {
			img = lock.Image{Ref: strings.SplitN(o.val, "@", 2)[0], Digest: d.DigestStr()}
		}
		*o.dst = img
	}
	return nil
}

// planExpect is what the smoke tests compare the image with: the lock's versions and the
// plan's modules.
func planExpect(l *lock.Lock, p *plan.Plan) smoke.Expect {
	var e smoke.Expect
	for _, c := range []struct {
		name string
		dst  *string
	}{{lock.Nginx, &e.Nginx}, {lock.OpenSSL, &e.OpenSSL}, {lock.PCRE2, &e.PCRE2}} {
		if comp, ok := l.Component(c.name); ok {
			*c.dst = comp.Version
		}
	}
	e.Modules = []string{}
	for _, name := range p.Modules {
		for _, m := range plan.Modules {
			if m.Name == name {
				e.Modules = append(e.Modules, m.Flag)
			}
		}
	}
	return e
}

// checkHostSmoke: the host engine smoke-tests in runc; say so before an hour of compiling.
func checkHostSmoke() error {
	for _, tool := range []string{"runc", "umoci"} {
		if _, err := exec.LookPath(tool); err != nil {
			return usageErrorf("the smoke tests need %s (apt-get install runc umoci, or .ci/install-deps); or pass --no-smoke with --output/--tree", tool)
		}
	}
	if os.Geteuid() != 0 {
		return usageErrorf("the smoke tests run the image in runc, which needs root: run as root (sudo), or pass --no-smoke with --output/--tree")
	}
	return nil
}

// checkHostGlibc refuses a runtime image whose glibc is older than this machine's, which
// the host engine links against.
func checkHostGlibc(base v1.Image, ref string) error {
	out, err := exec.Command("getconf", "GNU_LIBC_VERSION").Output()
	if err != nil {
		return fmt.Errorf("reading this machine's glibc version (getconf GNU_LIBC_VERSION): %w", err)
	}
	hostV := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "glibc"))
	baseV, err := image.GlibcVersion(base)
	if err != nil {
		return fmt.Errorf("reading the glibc version of the runtime image %s: %w", ref, err)
	}
	if err := image.CompareGlibc(hostV, baseV); err != nil {
		return fmt.Errorf("runtime image %s for a host build (nothing was built): %w", ref, err)
	}
	return nil
}

func hostPackageVersion(ctx context.Context, pkg string) (string, error) {
	argv := plan.PackageVersionCommand(pkg)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return "", fmt.Errorf("reading the version of %s on this machine (dpkg-query): %w", pkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// writeBundle adds the bare-metal files (systemd unit, sysusers.d, sysctl.d) to the tree.
func writeBundle(tree string, logf func(string, ...any)) error {
	conf, err := os.ReadFile(filepath.Join(tree, "etc", "nginx", "nginx.conf"))
	if err != nil {
		return fmt.Errorf("--bundle: reading the tree's nginx.conf: %w", err)
	}
	files, err := bundle.Write(tree, bundle.Options{NginxConf: conf})
	if err != nil {
		return fmt.Errorf("--bundle: %w", err)
	}
	logf("bundle: %s", strings.Join(files, ", "))
	return nil
}

// loadLock reads the lock file; the default path falls back to the lock built into the
// program, so the command also works outside a checkout.
func loadLock(file string, vlogf func(string, ...any)) (*lock.Lock, error) {
	l, err := lock.Load(file)
	if err == nil {
		return l, nil
	}
	if file == lock.DefaultPath && errors.Is(err, fs.ErrNotExist) {
		vlogf("lock: %s not found, using the lock built into this program", file)
		return lock.Default(), nil
	}
	return nil, fmt.Errorf("loading lock %s (nothing was built): %w", file, err)
}

func newPlan(l *lock.Lock, f buildFlags) (*plan.Plan, error) {
	opts := []plan.Option{plan.WithPlatform(f.platform), plan.WithCPU(f.cpu), plan.WithJobs(f.jobs)}
	if f.modules != "" {
		var mods []string
		for _, m := range strings.Split(f.modules, ",") {
			if m = strings.TrimSpace(m); m != "" {
				mods = append(mods, m)
			}
		}
		opts = append(opts, plan.WithModules(mods...))
	}
	return plan.New(l, opts...)
}

// runHostBuild runs the plan with the host executor and returns the install tree in the
// stage cache (read-only: copy it, never change it).
func runHostBuild(ctx context.Context, f buildFlags, p *plan.Plan, sources map[string]string, logf func(string, ...any), stderr io.Writer) (string, error) {
	start := time.Now()
	ex := host.New(host.WithCacheDir(f.cache), host.WithJobs(f.jobs), host.WithLogf(logf))
	res, err := ex.Run(ctx, p, sources)
	if err != nil {
		return "", err
	}
	tw := tabwriter.NewWriter(stderr, 0, 0, 2, ' ', tabwriter.AlignRight)
	// For a cached stage, the timings are those of the run that built it (what a cold
	// build of it costs on the machine that built it).
	fmt.Fprintln(tw, "stage\tresult\tbuild wall\tuser\tsys\t")
	for _, s := range res.Stages {
		state := "built"
		if s.Cached {
			state = "cached"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.Name, state, dur(s.Built.Wall), dur(s.Built.User), dur(s.Built.Sys))
	}
	tw.Flush()
	logf("build: install tree for %s (cpu %s) took %s", p.Platform, p.CPU, time.Since(start).Round(time.Second))
	return res.Tree, nil
}

func dur(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func checkEmptyOrAbsent(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		abs, _ := filepath.Abs(dir)
		return fmt.Errorf("%s is not empty: choose a new directory or empty it", abs)
	}
	return nil
}
