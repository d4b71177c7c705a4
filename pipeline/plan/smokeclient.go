package plan

// The smoke client in the engine: the Dagger engine runs pipeline/smoke's suite from inside
// the engine with a static build of this module's `ci` command (`ci smoke --address`),
// mounted into containers of the image under test. These are its build command and where
// it lives there, in one place, so the executor holds no command or path of its own.

// SmokeServiceAlias is the host name under which the client's container reaches the nginx
// service (its service binding).
const SmokeServiceAlias = "nginx"

// SmokeClientPath is where the client binary is mounted in the image's containers: a
// directory no image has, so the mount hides nothing of the image.
const SmokeClientPath = "/.nginx-forge-smoke/ci"

// SmokeClientPackage is the client's Go package: this module's command line.
const SmokeClientPackage = "github.com/nginx-forge/nginx-forge/ci"

// SmokeClientBuild is the host command that builds the client for platform into out, and
// the environment it adds: CGO_ENABLED=0 makes a static binary, which needs nothing of the
// image (a distroless base has no libc for other programs to rely on, and none of its
// version); -trimpath and -buildvcs=false make the same sources give the same bytes, so
// the engine, which caches by content, sees the same client file until the code changes.
func SmokeClientBuild(platform Platform, out string) (argv, env []string) {
	return []string{"go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, SmokeClientPackage},
		[]string{"CGO_ENABLED=0", "GOOS=" + platform.OS, "GOARCH=" + platform.Arch}
}
