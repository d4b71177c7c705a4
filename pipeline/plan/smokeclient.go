package plan

import (
	"cmp"
	"path"
)

// The smoke client in the engine: the Dagger engine runs pipeline/smoke's suite from inside
// the engine with a static build of the module's dedicated smoke client
// (pipeline/smoke/cmd/smokeclient), mounted into containers of the image under test. The
// client is a declared input of the pipeline: built by the engine itself, as container
// steps whose inputs are the builder image, go.mod and go.sum, and the source of the
// client's packages only, so the engine's cache keeps it until one of those changes (a
// change to `ci` or to any package the client does not import leaves it cached). Nothing
// runs Go on the machine that runs `ci`. Its steps, paths and commands are declared here,
// in one place, so the executor holds no command or path of its own.

// SmokeServiceAlias is the host name under which the client's container reaches the nginx
// service (its service binding).
const SmokeServiceAlias = "nginx"

// SmokeClientPath is where the client binary is mounted in the image's containers: a
// directory no image has, so the mount hides nothing of the image.
const SmokeClientPath = "/.nginx-forge-smoke/smokeclient"

// SmokeClientModule is the module the client is built from: the checkout `ci` runs in.
const SmokeClientModule = "github.com/nginx-forge/nginx-forge"

// SmokeClientMain is the client's main package, relative to the module's root. A dedicated
// main that imports pipeline/smoke and nothing else of `ci`: its build's cache key changes
// with the smoke suite, not with every change to the command line.
const SmokeClientMain = "pipeline/smoke/cmd/smokeclient"

// smokeClientPackages are the module's package directories the client is built from: its
// main and every package of this module it imports (a test keeps this equal to `go list
// -deps`). Their directories, tests and testdata excluded, are all of the source the build
// step sees.
var smokeClientPackages = []string{"pipeline/internal/toolbox", "pipeline/lock", "pipeline/plan", "pipeline/progress", "pipeline/safeio", "pipeline/smoke", SmokeClientMain}

// smokeClientModules are the other modules the client's packages import from (a test keeps
// this equal to `go list -deps`): the download step fetches only these.
var smokeClientModules = []string{
	"github.com/andybalholm/brotli",
	"github.com/google/go-containerregistry",
	"github.com/klauspost/compress",
	"github.com/opencontainers/go-digest",
	"github.com/quic-go/qpack",
	"github.com/quic-go/quic-go",
	"golang.org/x/crypto",
	"golang.org/x/net",
	"golang.org/x/sys",
	"golang.org/x/text",
}

// SmokeClientStep is the in-engine build of the client, three container steps on the
// engine's own platform (Go cross-compiles for the plan's, so an arm64 image needs no
// emulated compiler):
//
//	setup     Image with the distribution's Go installed through apt (Setup, apt caches
//	          as for the builder): any Go from 1.21 on fetches the toolchain go.mod names.
//	download  ModFiles copied to SrcDir, then Download with Env: the toolchain and
//	          smokeClientModules from the Go module proxy, checked against the checksum
//	          database, into the step's own layer, so the result is cached by go.mod and
//	          go.sum alone.
//	build     Sources (module-relative globs; SourcesExcluded left out) copied to SrcDir,
//	          then Build with Env and BuildEnv, the Go build cache on a cache volume at
//	          BuildCache (it only makes a rebuild faster): the static client at Out.
type SmokeClientStep struct {
	Image           string
	Setup           []string
	ModFiles        []string
	Download        []string
	Env             []EnvVar
	SrcDir          string
	Sources         []string
	SourcesExcluded []string
	BuildCache      string
	BuildEnv        []EnvVar
	Build           []string
	Out             string
}

// Where the client's build keeps what it uses.
const (
	smokeClientSrcDir  = "/src/nginx-forge"
	smokeClientModDir  = "/root/go/pkg/mod"
	smokeClientBuildGo = "/root/.cache/go-build"
	smokeClientOut     = "/out/smokeclient"
)

// SmokeClientStep is the client's build for p's platform from p's builder image, by its
// tag (SmokeClientImage).
// CGO_ENABLED=0 makes a static binary, which needs nothing of the image (a distroless base
// has no libc for other programs to rely on, and none of its version); -trimpath and
// -buildvcs=false make the same sources give the same bytes.
func (p *Plan) SmokeClientStep() SmokeClientStep {
	srcs := []string{"go.mod", "go.sum"}
	for _, d := range smokeClientPackages {
		srcs = append(srcs, d+"/**")
	}
	return SmokeClientStep{
		Image: cmp.Or(p.SmokeClientImage, p.BuilderImage),
		Setup: append(append([]string(nil), ContainerShell...),
			"apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go ca-certificates >/dev/null"),
		ModFiles: []string{"go.mod", "go.sum"},
		Download: append([]string{"go", "mod", "download"}, smokeClientModules...),
		// auto: the distribution's Go (which may default to its own) switches to go.mod's.
		Env: []EnvVar{{"GOTOOLCHAIN", "auto"}, {"GOMODCACHE", smokeClientModDir},
			{"GOFLAGS", "-mod=readonly"}},
		SrcDir:          smokeClientSrcDir,
		Sources:         srcs,
		SourcesExcluded: []string{"**/*_test.go", "**/testdata"},
		BuildCache:      smokeClientBuildGo,
		BuildEnv: []EnvVar{{"GOCACHE", smokeClientBuildGo}, {"GOPROXY", "off"},
			{"CGO_ENABLED", "0"}, {"GOOS", p.Platform.OS}, {"GOARCH", p.Platform.Arch}},
		Build: []string{"go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w",
			"-o", smokeClientOut, "./" + path.Clean(SmokeClientMain)},
		Out: smokeClientOut,
	}
}
