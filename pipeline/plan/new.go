package plan

import (
	"embed"
	"fmt"
	"slices"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Option configures New.
type Option func(*options) error

type options struct {
	platform Platform
	cpu      string
	jobs     int
	modules  []string
	optimize string
	// buildArch is the builder's architecture when it is not the target's (ForBuild).
	buildArch string
	// training: NewTraining's plan, up to the training stage, never from a recorded profile.
	training bool
}

// WithPlatform sets the target platform, one of supportedPlatforms (default DefaultPlatform).
func WithPlatform(p Platform) Option {
	return func(o *options) error {
		if !slices.Contains(supportedPlatforms, p) {
			return fmt.Errorf("platform %q is not supported: use %s", p, SupportedList())
		}
		o.platform = p
		return nil
	}
}

// WithCPU sets the -march level (see CPULevels); "" keeps the platform's default, "native"
// targets the build machine (allowed, but flagged in Plan.Native and Plan.Warnings).
func WithCPU(level string) Option {
	return func(o *options) error { o.cpu = level; return nil }
}

// WithJobs sets the parallel make jobs (0: the executor decides, usually the CPU count).
func WithJobs(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("jobs %d: must be 0 (automatic) or more", n)
		}
		o.jobs = n
		return nil
	}
}

// WithModules sets the nginx module set by names from Modules: a plain list replaces the
// default set (DefaultModulesOf), a list of +name and -name entries changes it (see
// applyModules).
func WithModules(names ...string) Option {
	return func(o *options) error {
		mods, err := applyModules(o.modules, names)
		if err != nil {
			return err
		}
		o.modules = mods
		return nil
	}
}

//go:embed files/nginx.conf files/index.html files/compression.d files/train
var shipped embed.FS

// New returns the plan that builds l's components for the options' platform.
func New(l *lock.Lock, opts ...Option) (*Plan, error) {
	p, err := newPlan(l, opts)
	if err != nil {
		return nil, err
	}
	if p.lock == nil {
		// What ForBuild makes the builder's plan from: the same lock and options.
		p.lock, p.opts = l, append([]Option(nil), opts...)
	}
	return p, nil
}

func newPlan(l *lock.Lock, opts []Option) (*Plan, error) {
	if l == nil {
		return nil, fmt.Errorf("plan: no lock given")
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("plan: invalid lock: %w", err)
	}
	o := options{platform: DefaultPlatform, modules: DefaultModulesOf(l), optimize: DefaultOptimize}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
	}
	st := stackOf(l)
	cross := o.buildArch != "" && o.buildArch != o.platform.Arch
	if o.optimize == OptimizeAuto && cross {
		o.optimize = OptimizeNone
	}
	if cross && o.optimize != OptimizeNone {
		return nil, fmt.Errorf("plan: optimize %q cannot be cross-compiled for %s from a linux/%s builder: use --optimize none, or build on a %s machine", o.optimize, o.platform, o.buildArch, o.platform)
	}
	if o.optimize == OptimizeAuto && !o.training {
		return newAuto(l, opts)
	}
	if err := resolveCPU(&o); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	modFlags, modNames, err := moduleFlags(l, o.modules)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	b := newBuilder(l, o, st, modNames)
	b.libraryStages()
	b.moduleStages(modFlags)
	b.toolsForSources()
	if err := b.shippedFiles(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if b.pgo {
		done, err := b.pgoStages()
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		if done { // the training plan ends at the training
			return b.p, b.crossify()
		}
	}
	b.p.Stages = append(b.p.Stages, Stage{
		Name:   lock.Nginx,
		Source: b.src(lock.Nginx),
		Deps:   b.nginxDeps,
		Env:    b.nginxEnv(b.ccOpt, b.ldOpt),
		Files:  b.files,
		Script: b.nginxScript,
	})
	return b.p, b.crossify()
}

// resolveCPU fills in the platform's default CPU level and checks the level can be built
// for the platform from this machine.
func resolveCPU(o *options) error {
	if o.cpu == "" {
		o.cpu = defaultCPU(o.platform.Arch)
	}
	if err := checkCPU(o.cpu, o.platform.Arch); err != nil {
		return err
	}
	if o.cpu == nativeCPU && o.platform.Arch != hostArch() {
		return fmt.Errorf("CPU level %q cannot be used for %s from a %s machine: name a level", nativeCPU, o.platform, hostArch())
	}
	return nil
}

// newAuto is the auto mode: the pgo plan when it builds from a recorded profile, else none.
func newAuto(l *lock.Lock, opts []Option) (*Plan, error) {
	p, err := New(l, append(append([]Option(nil), opts...), WithOptimize(OptimizePGO))...)
	if err != nil {
		return nil, err
	}
	if p.ProfileSHA256 != "" {
		return p, nil
	}
	return New(l, append(append([]Option(nil), opts...), WithOptimize(OptimizeNone))...)
}

func without(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

// LibcryptPackage is the Debian/Ubuntu package whose libcrypt.a is linked into nginx: its
// version belongs in the image's SBOM (see PackageVersionCommand).
const LibcryptPackage = "libcrypt-dev"

// PackageVersionCommand is the argv that prints an installed package's version, run where
// the build ran (the builder container, or this machine).
func PackageVersionCommand(pkg string) []string {
	return []string{"dpkg-query", "-W", "-f=${Version}", pkg}
}

// ToolchainPackages are the builder's packages whose installed versions a provenance
// records: the compiler, binutils, the C library's headers and make, which build-essential
// (a metapackage, whose own version says nothing of them) brings, then every package the
// setup installs by name. With the lock's archive snapshot they say exactly which
// toolchain built the image.
func (p *Plan) ToolchainPackages() []string {
	out := []string{"gcc", "binutils", "libc6-dev", "make"}
	for _, pkg := range p.BuildPackages {
		if !slices.Contains(out, pkg) {
			out = append(out, pkg)
		}
	}
	return out
}

// GlibcVersionCommand is the argv that prints the glibc the build links against ("glibc
// 2.39"), run where the build runs: the runtime image needs at least that glibc.
func GlibcVersionCommand() []string {
	return []string{"getconf", "GNU_LIBC_VERSION"}
}

// buildPackages are what a Ubuntu 24.04 builder installs (apt-get install --no-install-recommends).
var buildPackages = []string{
	"build-essential", // gcc, make, libc6-dev, binutils (ar, strip)
	"perl",            // OpenSSL's Configure and perlasm
	LibcryptPackage,   // libcrypt.a, linked statically into nginx
	"linux-libc-dev",  // linux/tls.h for OpenSSL's kTLS
	"ca-certificates", // not needed to compile; lets the builder fetch over https
}

var hostTools = []Tool{
	{Command: "cc", Package: "gcc"},
	{Command: "make", Package: "make"},
	{Command: "perl", Package: "perl"},
	{Command: "ar", Package: "binutils"},
	{Command: "strip", Package: "binutils"},
	{Command: "tar", Package: "tar"},
	{Command: "gzip", Package: "gzip"},
	{Command: "find", Package: "findutils"},
	{Command: "sed", Package: "sed"},
}

var hostLibraries = []Tool{
	{Command: "libcrypt.a", Package: LibcryptPackage},
	{Command: "libc.so", Package: "libc6-dev"},
}

func opensslTarget(arch string) string {
	// Naming the target instead of letting ./config guess from uname keeps a cross-platform
	// container build (arm64 under emulation) from picking the wrong assembly.
	if arch == "arm64" {
		return "linux-aarch64"
	}
	return "linux-x86_64"
}
