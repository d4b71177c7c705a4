// Package plan describes the build once, independently of any engine: which components are
// built in which order, from which verified tarballs, by which scripts, with which flags and
// environment, and what the resulting install tree contains. Executors (pipeline/engine/host on
// this machine, pipeline/engine/daggerexec in containers) run a Plan; they add no recipe logic of their
// own. This package imports neither Dagger nor go-containerregistry.
package plan

// The executor contract. Every stage's Script runs under `bash -euo pipefail` with the
// stage's Env plus these variables, whose values are absolute paths chosen by the executor:
//
//	SRC        the verified source as a .tar.gz that pipeline/source packed from the files
//	           pipeline/unpack unpacked and checked (never the downloaded archive itself),
//	           its one top directory holding the source; in a container it is named
//	           Source.FileName
//	WORK       an empty scratch directory, the current directory when Script starts
//	OUT        an empty directory the stage installs into; it is the stage's only output
//	DEP_<NAME> the OUT of each stage named in Deps, upper-cased (DEP_OPENSSL, ...)
//	JOBS       parallel make jobs
//
// The Dagger executor uses the fixed paths below so that container builds are identical
// wherever they run; the host executor uses directories of its own. Scripts must keep these
// paths out of their outputs (the scripts' -ffile-prefix-map maps $WORK to /build/<stage>).
import (
	"fmt"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

const (
	ContainerSrcDir  = "/src"  // SRC = /src/<file name>
	ContainerWorkDir = "/work" // WORK
	containerOutDir  = "/out"  // OUT = /out/<stage name>
	containerDepDir  = "/deps" // DEP_<NAME> = /deps/<stage name>
)

// Plan is a complete, engine-independent build description.
type Plan struct {
	Platform Platform
	// Cross is how the stages cross-compile for Platform on another architecture (ForBuild);
	// nil in a plan the target's own architecture builds.
	Cross *Cross
	// CPU is the named -march level every stage compiles for (see CPULevels).
	CPU string
	// Native is true when CPU is "native": the binary then only runs on CPUs like the build
	// machine's, so callers should warn (Warnings says so too).
	Native bool
	// Modules are the nginx modules compiled in, by the names in Modules (sorted as given).
	Modules []string
	// Jobs is the parallelism the caller asked for (0: the executor decides). It is not part
	// of any stage's identity: the same sources and flags give the same output at any -j.
	Jobs int
	// Optimize is the optimization mode: none, lto or pgo (see OptimizeModes).
	Optimize string
	// TrainingKey identifies the pgo mode's training (see TrainingKey in profile.go); "" in
	// the other modes.
	TrainingKey string
	// ProfileSHA256 is the recorded profile the pgo mode builds with (lock: profiles), or ""
	// when it trains during the build (or is not pgo).
	ProfileSHA256 string
	// Warnings are things the caller should tell the user (e.g. a non-portable CPU level).
	Warnings []string
	// SourceDateEpoch is exported to every stage and used for every timestamp.
	SourceDateEpoch int64
	// BuilderImage is the image (ref@digest when pinned) the container executor builds in.
	BuilderImage string
	// BuilderSnapshot is the lock's images.builder.snapshot: the moment of the archive the
	// builder installs BuildPackages from (apt's APT::Snapshot), or "" for the live archive.
	BuilderSnapshot string
	// SmokeClientImage is the image the in-engine smoke client is built in: the builder by
	// its tag (lock.Image.Followed). The client is a test tool, never in the image, and
	// ci smoke --image builds it from the program's own lock, whichever lock the image
	// came from.
	SmokeClientImage string
	// BuildPackages are the Debian/Ubuntu packages a builder needs (apt-get install names).
	BuildPackages []string
	// HostTools are the commands the host executor checks for before starting, each with the
	// package that provides it, so a missing tool gives one clear error.
	HostTools []Tool
	// HostLibraries are static libraries the compiler must find (checked with
	// `cc -print-file-name=NAME`), each with the package that provides it.
	HostLibraries []Tool
	// Stages in dependency order: each stage's Deps come before it.
	Stages []Stage
	// Final names the stage whose OUT is the install tree the image is made of.
	Final string

	// lock and opts are what New made the plan from, for ForBuild.
	lock *lock.Lock
	opts []Option
}

// CC is the C compiler command the stages compile with: cc, or the cross toolchain's gcc. An
// executor identifies the toolchain by it (its version is part of a host stage's key) and
// asks it where the static libraries are (HostLibraries).
func (p *Plan) CC() string {
	if p.Cross != nil {
		return p.Cross.tool("gcc")
	}
	return "cc"
}

// Tool is a command a stage script needs and the Debian/Ubuntu package that provides it.
type Tool struct {
	Command string
	Package string
}

// Stage builds one component from one tarball into OUT.
type Stage struct {
	Name   string
	Source Source
	// Deps are the names of earlier stages whose OUT this stage reads (as DEP_<NAME>).
	Deps []string
	// Env is the stage's environment (besides the contract variables), in a fixed order.
	Env []EnvVar
	// Files are extra inputs written into WORK before Script runs (path relative to WORK),
	// e.g. the shipped nginx.conf. Part of the stage's identity for caching.
	Files []File
	// Script is the bash program that builds and installs the component.
	Script string
}

// Source is the verified tarball a stage builds from: a release tarball pinned by SHA-256,
// or the archive of a git source's tree, pinned by the tree ID.
type Source struct {
	Component string // lock component name
	Version   string
	FileName  string // as fetched and cached (the lock URL's last element)
	SHA256    string // a tarball's; "" for a git source
	Tree      string // a git source's tree (lock: git.tree), verified over the archive's files
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string
	Value string
}

// File is a file placed into a stage's WORK directory.
type File struct {
	Path string
	Mode uint32
	Data []byte
}

// Stage returns the named stage.
func (p *Plan) Stage(name string) (Stage, bool) {
	for _, s := range p.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return Stage{}, false
}

// CheckOrder is nil when every stage's Deps name earlier stages and Final names a stage: the
// order both engines run the stages in is the plan's, so a plan that breaks it is refused
// once, before any engine starts (engine.CheckInput), not half-way through a build.
func (p *Plan) CheckOrder() error {
	seen := map[string]bool{}
	for _, s := range p.Stages {
		for _, d := range s.Deps {
			if !seen[d] {
				return fmt.Errorf("plan: stage %s depends on %q, which is not an earlier stage of the plan", s.Name, d)
			}
		}
		seen[s.Name] = true
	}
	if !seen[p.Final] {
		return fmt.Errorf("plan: the final stage %q is not one of the plan's stages", p.Final)
	}
	return nil
}
