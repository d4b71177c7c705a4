package plan

import (
	"embed"
	"fmt"
	"strconv"
	"strings"

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
	// training: NewTraining's plan, up to the training stage, never from a recorded profile.
	training bool
}

// WithPlatform sets the target platform, "linux/amd64" or "linux/arm64" (default linux/amd64).
func WithPlatform(p string) Option {
	return func(o *options) error {
		os, arch, ok := strings.Cut(p, "/")
		if !ok || os != "linux" || (arch != "amd64" && arch != "arm64") {
			return fmt.Errorf("platform %q is not supported: use linux/amd64 or linux/arm64", p)
		}
		o.platform = Platform{OS: os, Arch: arch}
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
// ApplyModules).
func WithModules(names ...string) Option {
	return func(o *options) error {
		mods, err := ApplyModules(o.modules, names)
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
	if l == nil {
		return nil, fmt.Errorf("plan: no lock given")
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("plan: invalid lock: %w", err)
	}
	o := options{platform: Platform{OS: "linux", Arch: "amd64"}, modules: DefaultModulesOf(l), optimize: DefaultOptimize}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
	}
	st := stackOf(l)
	if err := st.checkOptimize(o.optimize); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if o.optimize == OptimizeAuto && !st.defaultLibraries() {
		o.optimize = OptimizeNone
	}
	if o.optimize == OptimizeAuto && !o.training {
		return newAuto(l, opts)
	}
	if o.cpu == "" {
		o.cpu = DefaultCPU(o.platform.Arch)
	}
	if err := checkCPU(o.cpu, o.platform.Arch); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	modFlags, modNames, err := moduleFlags(l, o.modules)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if o.cpu == NativeCPU && o.platform.Arch != hostArch() {
		return nil, fmt.Errorf("plan: CPU level %q cannot be used for %s from a %s machine: name a level", NativeCPU, o.platform, hostArch())
	}

	p := &Plan{
		Platform:        o.platform,
		CPU:             o.cpu,
		Native:          o.cpu == NativeCPU,
		Modules:         modNames,
		Jobs:            o.jobs,
		Optimize:        o.optimize,
		SourceDateEpoch: l.SourceDateEpoch,
		BuilderImage:    l.Images.Builder.Pinned(),
		BuildPackages:   buildPackages,
		HostTools:       hostTools,
		HostLibraries:   hostLibraries,
		Final:           lock.Nginx,
	}
	if p.Native {
		p.Warnings = append(p.Warnings, `CPU level "native" bakes the build machine's CPU features into the binary: it may crash with SIGILL on any other machine`)
	}
	f := newFlags(o.platform.Arch, o.cpu)
	lto := o.optimize != OptimizeNone
	pgo := o.optimize == OptimizePGO
	// opt adds the mode's compile flags to a stage's CFLAGS, and the archiver to its env.
	opt := func(cflags string, env ...EnvVar) []EnvVar {
		if !lto {
			return env
		}
		env[0].Value = cflags + " " + ltoFlag
		return append(env, ltoTools...)
	}
	common := func(extra ...EnvVar) []EnvVar {
		env := []EnvVar{
			{"SOURCE_DATE_EPOCH", strconv.FormatInt(l.SourceDateEpoch, 10)},
			{"TZ", "UTC"},
			{"LC_ALL", "C"},
		}
		return append(env, extra...)
	}
	src := func(name string) Source {
		c := l.MustComponent(name)
		s := Source{Component: c.Name, Version: c.Version, FileName: c.FileName(), SHA256: c.SHA256}
		if c.Git != nil {
			s.Tree = c.Git.Tree
		}
		return s
	}

	opensslEnv := func(extra ...string) []EnvVar {
		cflags := f.cflags()
		if lto {
			cflags += " " + ltoFlag
		}
		for _, e := range extra {
			cflags += " " + e
		}
		env := common(
			EnvVar{"CFLAGS", cflags},
			EnvVar{"LDFLAGS", f.ldflags()},
			EnvVar{"OPENSSL_TARGET", opensslTarget(o.platform.Arch)},
		)
		if lto {
			env = append(env, ltoTools...)
		}
		return env
	}
	zlibStage := Stage{Name: st.zlib, Source: src(st.zlib), Env: common(EnvVar{"CFLAGS", f.cflags()}), Script: libraryStageScripts[st.zlib]}
	if st.zlib == lock.Zlib {
		zlibStage.Env, zlibStage.Script = common(opt(f.zlibCFlags(), EnvVar{"CFLAGS", f.zlibCFlags()})...), zlibScript
	}
	p.Stages = []Stage{
		zlibStage,
		{
			Name:   lock.PCRE2,
			Source: src(lock.PCRE2),
			Env:    common(opt(f.cflags(), EnvVar{"CFLAGS", f.cflags()}, EnvVar{"LDFLAGS", f.ldflags()})...),
			Script: pcre2Script,
		},
	}
	switch {
	case st.tls != lock.OpenSSL:
		p.Stages = append(p.Stages, Stage{
			Name:   st.tls,
			Source: src(st.tls),
			Env:    common(EnvVar{"CFLAGS", f.cflags()}, EnvVar{"LDFLAGS", f.ldflags()}),
			Script: libraryStageScripts[st.tls],
		})
		p.BuildPackages = append(append([]string(nil), p.BuildPackages...), cmakePackages...)
		p.HostTools = append(append([]Tool(nil), p.HostTools...), cmakeTools...)
	case !pgo:
		p.Stages = append(p.Stages, Stage{
			Name:   lock.OpenSSL,
			Source: src(lock.OpenSSL),
			Env:    opensslEnv(),
			Script: opensslScript,
		})
	default:
		p.Stages = append(p.Stages, Stage{
			Name:   StageOpenSSLInstrumented,
			Source: src(lock.OpenSSL),
			Env:    opensslEnv(profileGenerate(lock.OpenSSL)),
			Script: opensslInstrumentedScript,
		})
	}

	// Third-party modules: each library into a static prefix (like zlib and PCRE2), each
	// module's source into a stage of its own that the nginx stage copies in.
	nginxDeps := []string{st.zlib, lock.PCRE2, st.tls}
	shippedNames := []string{"nginx.conf", "index.html"}
	for _, name := range modNames {
		m, _ := lookupModule(name)
		if len(m.Components) == 0 {
			continue
		}
		mod, lib := m.Components[0], m.Components[1]
		p.Stages = append(p.Stages,
			Stage{
				Name:   lib,
				Source: src(lib),
				Env:    common(opt(f.cflags(), EnvVar{"CFLAGS", f.cflags()}, EnvVar{"LDFLAGS", f.ldflags()})...),
				Script: libraryScripts[lib],
			},
			Stage{
				Name:   mod,
				Source: src(mod),
				Env:    common(),
				Script: moduleSourceScript(mod),
			})
		nginxDeps = append(nginxDeps, lib, mod)
		shippedNames = append(shippedNames, m.Conf)
	}
	for _, s := range p.Stages {
		if s.Source.Tree != "" {
			// The Dockerfile rendering checks a git source's tree with git in the builder.
			p.BuildPackages = append(append([]string(nil), p.BuildPackages...), "git")
			break
		}
	}
	for _, s := range p.Stages {
		if strings.HasSuffix(s.Source.FileName, ".xz") {
			// Debian repacks some sources as .tar.xz (the test lock's zstd); tar needs xz.
			p.BuildPackages = append(append([]string(nil), p.BuildPackages...), "xz-utils")
			p.HostTools = append(append([]Tool(nil), p.HostTools...), Tool{Command: "xz", Package: "xz-utils"})
			break
		}
	}

	var files []File
	for _, name := range shippedNames {
		b, err := shipped.ReadFile("files/" + name)
		if err != nil {
			return nil, fmt.Errorf("plan: reading shipped file %s: %w", name, err)
		}
		if name == "nginx.conf" {
			if b, err = st.nginxConf(b); err != nil {
				return nil, fmt.Errorf("plan: %w", err)
			}
		}
		files = append(files, File{Path: "files/" + name, Mode: 0o644, Data: b})
	}
	ccOpt, ldOpt := f.nginxCCOpt(), f.nginxLDOpt()
	if lto {
		ccOpt += " " + ltoFlag
		ldOpt += " " + ltoFlag
	}
	nginxEnv := func(cc, ld string) []EnvVar {
		return common(EnvVar{"NGINX_CC_OPT", cc}, EnvVar{"NGINX_LD_OPT", ld})
	}
	script := nginxScript(st, modFlags, modNames)
	if pgo {
		// Train with nginx's own build (same configure, modules and flags, instrumented), or
		// take the lock's recorded profile of exactly that training; then build OpenSSL and
		// nginx with the profile.
		gen := profileGenerate(lock.Nginx)
		trainDeps := append([]string{StageOpenSSLInstrumented}, without(nginxDeps, lock.OpenSSL)...)
		trainFiles := append([]File(nil), files...)
		for _, name := range []string{"nginx.conf", "train.sh", "ecdsa.crt", "ecdsa.key", "rsa.crt", "rsa.key"} {
			b, err := shipped.ReadFile("files/train/" + name)
			if err != nil {
				return nil, fmt.Errorf("plan: reading training file %s: %w", name, err)
			}
			trainFiles = append(trainFiles, File{Path: "files/train/" + name, Mode: 0o644, Data: b})
		}
		p.Stages = append(p.Stages, Stage{
			Name:   StagePGOTrain,
			Source: src(lock.Nginx),
			Deps:   trainDeps,
			Env:    nginxEnv(ccOpt+" "+gen, ldOpt+" "+gen),
			Files:  trainFiles,
			Script: pgoTrainScript(st, modFlags, modNames),
		})
		// The training's client.
		curl := func() {
			p.BuildPackages = append(append([]string(nil), p.BuildPackages...), "curl")
			p.HostTools = append(append([]Tool(nil), p.HostTools...), Tool{Command: "curl", Package: "curl"})
		}
		p.TrainingKey = trainingKey(p)
		if o.training {
			curl()
			p.Stages = closure(p.Stages, StagePGOTrain)
			p.Final = StagePGOTrain
			return p, nil
		}
		profile := StagePGOTrain
		if rec, ok := l.Profile(p.Platform.String(), p.TrainingKey); ok {
			p.Stages = withoutStages(p.Stages, StageOpenSSLInstrumented, StagePGOTrain)
			s := rec.Source()
			p.Stages = append(p.Stages, Stage{
				Name:   StagePGOProfile,
				Source: Source{Component: s.Name, Version: s.Version, FileName: rec.FileName(), SHA256: rec.SHA256},
				Env:    common(),
				Script: pgoProfileScript,
			})
			profile = StagePGOProfile
			p.ProfileSHA256 = rec.SHA256
		} else {
			curl()
			w := `optimize "pgo" trains during this build, and two trainings count a little differently (timing, random handshakes), so this build is not reproducible: record the profile once into the lock (go run ./ci pgo-profile --write --url URL) and every pgo build of that lock uses it`
			for _, r := range l.Profiles {
				if r.Platform == p.Platform.String() {
					w += fmt.Sprintf("; the lock's recorded profile for %s was trained for another plan (training %.12s, this plan's %.12s: other sources, flags, modules or training), so it is not used", r.Platform, r.Training, p.TrainingKey)
				}
			}
			p.Warnings = append(p.Warnings, w)
		}
		p.Stages = append(p.Stages, Stage{
			Name:   lock.OpenSSL,
			Source: src(lock.OpenSSL),
			Deps:   []string{profile},
			Env:    opensslEnv(profileUse),
			Script: opensslProfileScript(profile),
		})
		nginxDeps = append(nginxDeps, profile)
		ccOpt += " " + profileUse
		ldOpt += " " + profileUse
		script = nginxScriptWith(st, modFlags, modNames, profileCopy(lock.Nginx, profile))
	}
	p.Stages = append(p.Stages, Stage{
		Name:   lock.Nginx,
		Source: src(lock.Nginx),
		Deps:   nginxDeps,
		Env:    nginxEnv(ccOpt, ldOpt),
		Files:  files,
		Script: script,
	})
	return p, nil
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
