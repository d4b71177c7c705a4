package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// builder is one plan in the making: what New worked out once (the lock, the options, the
// library stack, the compile flags) and the stages, files and nginx settings each step
// adds to.
type builder struct {
	l        *lock.Lock
	o        options
	st       stack
	f        flags
	lto, pgo bool
	modNames []string
	modFlags []string // nginx's configure arguments for the modules
	p        *Plan

	nginxDeps    []string // the stages the nginx stage copies in
	shippedNames []string // files/ entries the nginx stage ships
	files        []File
	ccOpt, ldOpt string // NGINX_CC_OPT and NGINX_LD_OPT
	nginxScript  string
}

func newBuilder(l *lock.Lock, o options, st stack, modNames []string) *builder {
	b := &builder{
		l: l, o: o, st: st, f: newFlags(o.platform.Arch, o.cpu),
		lto: o.optimize != OptimizeNone, pgo: o.optimize == OptimizePGO,
		modNames: modNames,
		p: &Plan{
			Platform:         o.platform,
			CPU:              o.cpu,
			Native:           o.cpu == nativeCPU,
			Modules:          modNames,
			Jobs:             o.jobs,
			Optimize:         o.optimize,
			SourceDateEpoch:  l.SourceDateEpoch,
			BuilderImage:     l.Images.Builder.Pinned(),
			BuilderSnapshot:  l.Images.Builder.Snapshot,
			SmokeClientImage: l.Images.Builder.Followed(),
			BuildPackages:    buildPackages,
			HostTools:        hostTools,
			HostLibraries:    hostLibraries,
			Final:            lock.Nginx,
			Cross:            newCross(o),
		},
		nginxDeps:    []string{st.zlib, lock.PCRE2, st.tls},
		shippedNames: []string{"nginx.conf", "index.html"},
	}
	if b.p.Native {
		b.p.Warnings = append(b.p.Warnings, `CPU level "native" bakes the build machine's CPU features into the binary: it may crash with SIGILL on any other machine`)
	}
	return b
}

// common is the environment every stage gets (reproducible dates, time zone and locale),
// then extra.
func (b *builder) common(extra ...EnvVar) []EnvVar {
	env := []EnvVar{
		{"SOURCE_DATE_EPOCH", strconv.FormatInt(b.l.SourceDateEpoch, 10)},
		{"TZ", "UTC"},
		{"LC_ALL", "C"},
	}
	return append(env, extra...)
}

// opt adds the mode's compile flags to a stage's CFLAGS (env[0], valued cflags), and the
// archiver to its env.
func (b *builder) opt(cflags string, env ...EnvVar) []EnvVar {
	if !b.lto {
		return env
	}
	env[0].Value = cflags + " " + ltoFlag
	return append(env, ltoTools...)
}

// src is the verified source of the lock's component name.
func (b *builder) src(name string) Source {
	c := b.l.MustComponent(name)
	s := Source{Component: c.Name, Version: c.Version, FileName: c.FileName(), SHA256: c.SHA256}
	if c.Git != nil {
		s.Tree = c.Git.Tree
	}
	return s
}

// opensslEnv is OpenSSL's environment, with extra compile flags (profile generation or use).
func (b *builder) opensslEnv(extra ...string) []EnvVar { return b.libraryEnv(lock.OpenSSL, extra...) }

// libraryEnv is the environment of the stage of library name (zlib or zlib-ng, PCRE2,
// OpenSSL or AWS-LC): its CFLAGS with the mode's LTO flag and extra (profile generation or
// use) appended, LDFLAGS where its build links programs, OpenSSL's target, and the LTO
// archiver.
func (b *builder) libraryEnv(name string, extra ...string) []EnvVar {
	cflags := b.f.cflags()
	if name == lock.Zlib {
		cflags = b.f.zlibCFlags()
	}
	if b.lto {
		cflags += " " + ltoFlag
	}
	for _, e := range extra {
		cflags += " " + e
	}
	env := []EnvVar{{"CFLAGS", cflags}}
	if name != lock.Zlib && name != lock.ZlibNG {
		env = append(env, EnvVar{"LDFLAGS", b.f.ldflags()})
	}
	if name == lock.OpenSSL {
		env = append(env, EnvVar{"OPENSSL_TARGET", opensslTarget(b.o.platform.Arch)})
	}
	if b.lto {
		env = append(env, ltoTools...)
	}
	return b.common(env...)
}

// libraryScript is the script of library name's stage in the plan's mode.
func (b *builder) libraryScript(name string) string {
	switch name {
	case lock.Zlib:
		return zlibScript
	case lock.PCRE2:
		return pcre2Script
	case lock.OpenSSL:
		return opensslScript
	case lock.AWSLC:
		return awsLCScriptFor(b.lto)
	case lock.ZlibNG:
		return zlibNGScript
	}
	return ""
}

// profileUseFor is the profile-use flags of library name's stage.
func (b *builder) profileUseFor(name string) []string {
	if name == lock.OpenSSL {
		return []string{profileUse}
	}
	return []string{profileUse, profileUseAbsPaths}
}

// isProfiled reports whether library name is one of the stack's profiled libraries.
func (b *builder) isProfiled(name string) bool {
	for _, p := range b.st.profiled() {
		if p == name {
			return true
		}
	}
	return false
}

func (b *builder) nginxEnv(cc, ld string) []EnvVar {
	return b.common(EnvVar{"NGINX_CC_OPT", cc}, EnvVar{"NGINX_LD_OPT", ld})
}

// libraryStages adds the stages of the libraries nginx links: zlib (or zlib-ng), PCRE2 and
// the TLS library (OpenSSL, or AWS-LC built with cmake). In the pgo mode the stack's profiled
// libraries are built instrumented here (stage <name>-instrumented), and again with the
// profile by pgoStages.
func (b *builder) libraryStages() {
	b.p.Stages = nil
	for _, name := range []string{b.st.zlib, lock.PCRE2, b.st.tls} {
		s := Stage{Name: name, Source: b.src(name), Env: b.libraryEnv(name), Script: b.libraryScript(name)}
		if b.pgo && b.isProfiled(name) {
			s.Name, s.Env, s.Script = instrumentedStage(name), b.libraryEnv(name, profileGenerate(name)), instrumentedScript(s.Script)
		}
		b.p.Stages = append(b.p.Stages, s)
	}
	if b.st.tls != lock.OpenSSL {
		b.p.BuildPackages = append(append([]string(nil), b.p.BuildPackages...), cmakePackages...)
		b.p.HostTools = append(append([]Tool(nil), b.p.HostTools...), cmakeTools...)
	}
}

// moduleStages adds the third-party modules: each library into a static prefix (like zlib
// and PCRE2), each module's source into a stage of its own that the nginx stage copies in.
// It also sets the nginx stage's script, which configures the modules (modFlags).
func (b *builder) moduleStages(modFlags []string) {
	for _, name := range b.modNames {
		m, _ := lookupModule(name)
		if len(m.Components) == 0 {
			continue
		}
		// The module's source first, then the libraries it links (none for a module that
		// needs only nginx).
		mod, libs := m.Components[0], m.Components[1:]
		for _, lib := range libs {
			b.p.Stages = append(b.p.Stages, Stage{
				Name:   lib,
				Source: b.src(lib),
				Env:    b.common(b.opt(b.f.cflags(), EnvVar{"CFLAGS", b.f.cflags()}, EnvVar{"LDFLAGS", b.f.ldflags()})...),
				Script: moduleLibraryScript(lib),
			})
		}
		b.p.Stages = append(b.p.Stages, Stage{
			Name:   mod,
			Source: b.src(mod),
			Env:    b.common(),
			Script: moduleSourceScript(mod),
		})
		b.nginxDeps = append(append(b.nginxDeps, libs...), mod)
		if m.Conf != "" {
			b.shippedNames = append(b.shippedNames, m.Conf)
		}
	}
	b.modFlags = modFlags
	b.nginxScript = nginxScript(b.st, modFlags, b.modNames)
}

// toolsForSources adds what unpacking and checking the stages' sources needs beyond the
// base set: git for a git source's tree, xz for a .tar.xz.
func (b *builder) toolsForSources() {
	for _, s := range b.p.Stages {
		if s.Source.Tree != "" {
			// The Dockerfile rendering checks a git source's tree with git in the builder.
			b.p.BuildPackages = append(append([]string(nil), b.p.BuildPackages...), "git")
			break
		}
	}
	for _, s := range b.p.Stages {
		if strings.HasSuffix(s.Source.FileName, ".xz") {
			// Debian repacks some sources as .tar.xz (the test lock's zstd); tar needs xz.
			b.p.BuildPackages = append(append([]string(nil), b.p.BuildPackages...), "xz-utils")
			b.p.HostTools = append(append([]Tool(nil), b.p.HostTools...), Tool{Command: "xz", Package: "xz-utils"})
			break
		}
	}
}

// shippedFiles reads the files the nginx stage ships (nginx.conf fitted to the stack) and
// sets the nginx compile and link options of the mode.
func (b *builder) shippedFiles() error {
	for _, name := range b.shippedNames {
		data, err := shipped.ReadFile("files/" + name)
		if err != nil {
			return fmt.Errorf("reading shipped file %s: %w", name, err)
		}
		if name == "nginx.conf" {
			if data, err = b.st.nginxConf(data); err != nil {
				return err
			}
		}
		b.files = append(b.files, File{Path: "files/" + name, Mode: 0o644, Data: data})
	}
	b.ccOpt, b.ldOpt = b.f.nginxCCOpt(), b.f.nginxLDOpt()
	if b.lto {
		b.ccOpt += " " + ltoFlag
		b.ldOpt += " " + ltoFlag
	}
	return nil
}

// pgoStages adds the pgo mode's stages: train with nginx's own build (same configure,
// modules and flags, instrumented), or take the lock's recorded profile of exactly that
// training; then build the profiled libraries (stack.profiled) and nginx with the profile. It reports done for the
// training plan (NewTraining), which ends at the training.
func (b *builder) pgoStages() (done bool, err error) {
	if err := b.trainingStage(); err != nil {
		return false, err
	}
	b.p.TrainingKey = trainingKey(b.p)
	if b.o.training {
		b.trainingClient()
		b.p.Stages = closure(b.p.Stages, StagePGOTrain)
		b.p.Final = StagePGOTrain
		return true, nil
	}
	profile := b.profileStage()
	for _, name := range b.st.profiled() {
		b.p.Stages = append(b.p.Stages, Stage{
			Name:   name,
			Source: b.src(name),
			Deps:   []string{profile},
			Env:    b.libraryEnv(name, b.profileUseFor(name)...),
			Script: profileScript(name, profile, b.libraryScript(name)),
		})
	}
	b.nginxDeps = append(b.nginxDeps, profile)
	b.ccOpt += " " + profileUse
	b.ldOpt += " " + profileUse
	b.nginxScript = nginxScriptWith(b.st, b.modFlags, b.modNames, profileCopy(lock.Nginx, profile))
	return false, nil
}

// trainingStage adds the instrumented nginx build that runs the training (against the
// instrumented libraries).
func (b *builder) trainingStage() error {
	gen := profileGenerate(lock.Nginx)
	var trainDeps []string
	for _, name := range b.st.profiled() {
		trainDeps = append(trainDeps, instrumentedStage(name))
	}
	for _, d := range b.nginxDeps {
		if !b.isProfiled(d) {
			trainDeps = append(trainDeps, d)
		}
	}
	trainFiles := append([]File(nil), b.files...)
	for _, name := range []string{"nginx.conf", "train.sh", "ecdsa.crt", "ecdsa.key", "rsa.crt", "rsa.key"} {
		data, err := shipped.ReadFile("files/train/" + name)
		if err != nil {
			return fmt.Errorf("reading training file %s: %w", name, err)
		}
		trainFiles = append(trainFiles, File{Path: "files/train/" + name, Mode: 0o644, Data: data})
	}
	b.p.Stages = append(b.p.Stages, Stage{
		Name:   StagePGOTrain,
		Source: b.src(lock.Nginx),
		Deps:   trainDeps,
		Env:    b.nginxEnv(b.ccOpt+" "+gen, b.ldOpt+" "+gen),
		Files:  trainFiles,
		Script: pgoTrainScript(b.st, b.modFlags, b.modNames),
	})
	return nil
}

// trainingClient adds curl, the training's client, to what the build needs.
func (b *builder) trainingClient() {
	b.p.BuildPackages = append(append([]string(nil), b.p.BuildPackages...), "curl")
	b.p.HostTools = append(append([]Tool(nil), b.p.HostTools...), Tool{Command: "curl", Package: "curl"})
}

// profileStage chooses where the profile comes from and returns that stage's name: the
// lock's recorded profile of this plan's training (the training stages then go), or the
// training itself, with a warning that the build is then not reproducible.
func (b *builder) profileStage() string {
	rec, ok := b.l.Profile(b.p.Platform.String(), b.p.TrainingKey)
	if !ok {
		b.trainingClient()
		w := `optimize "pgo" trains during this build, and two trainings count a little differently (timing, random handshakes), so this build is not reproducible: record the profile once into the lock (go run ./ci pgo-profile --write --url URL) and every pgo build of that lock uses it`
		for _, r := range b.l.Profiles {
			if r.Platform == b.p.Platform.String() {
				w += fmt.Sprintf("; the lock's recorded profile for %s was trained for another plan (training %.12s, this plan's %.12s: other sources, flags, modules or training), so it is not used", r.Platform, r.Training, b.p.TrainingKey)
			}
		}
		b.p.Warnings = append(b.p.Warnings, w)
		return StagePGOTrain
	}
	drop := []string{StagePGOTrain}
	for _, name := range b.st.profiled() {
		drop = append(drop, instrumentedStage(name))
	}
	b.p.Stages = withoutStages(b.p.Stages, drop...)
	s := rec.Source()
	b.p.Stages = append(b.p.Stages, Stage{
		Name:   stagePGOProfile,
		Source: Source{Component: s.Name, Version: s.Version, FileName: rec.FileName(), SHA256: rec.SHA256},
		Env:    b.common(),
		Script: pgoProfileScript,
	})
	b.p.ProfileSHA256 = rec.SHA256
	return stagePGOProfile
}
