package plan

import (
	"path"
	"strconv"
	"strings"
)

// What a container executor runs besides the stage scripts, in one place so that the Dagger
// executor (pipeline/engine/daggerexec) and the rendered Dockerfile (RenderDockerfile) run exactly the
// same commands and neither holds a flag or a script of its own.

// ContainerShell is the interpreter of every container step; the script is its last argument.
var ContainerShell = []string{"bash", "-euo", "pipefail", "-c"}

// ContainerAptCacheDirs are apt's download cache and package lists. Container executors
// mount them as cache volumes (locked: apt takes its own lock and does not share), so
// installing BuildPackages again after a builder change downloads nothing twice.
var ContainerAptCacheDirs = []string{"/var/cache/apt", "/var/lib/apt"}

// ContainerSetupScript installs BuildPackages in the builder. Ubuntu's and Debian's images
// ship /etc/apt/apt.conf.d/docker-clean, which deletes downloaded packages after every
// install and so defeats the cache volume: it goes first.
func (p *Plan) ContainerSetupScript() string {
	return `rm -f /etc/apt/apt.conf.d/docker-clean
echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' > /etc/apt/apt.conf.d/keep-cache
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends ` + strings.Join(p.BuildPackages, " ") + "\n"
}

// ContainerSetupCommand is the argv that runs ContainerSetupScript.
func (p *Plan) ContainerSetupCommand() []string {
	return append(append([]string(nil), ContainerShell...), p.ContainerSetupScript())
}

// ContainerSrc is SRC for stage s in a container: the verified tarball under ContainerSrcDir.
func ContainerSrc(s Stage) string { return path.Join(ContainerSrcDir, s.Source.FileName) }

// ContainerOut is the OUT of the named stage in a container.
func ContainerOut(stage string) string { return path.Join(ContainerOutDir, stage) }

// ContainerDep is where a dependency's OUT is mounted for a later stage (DEP_<NAME>).
func ContainerDep(stage string) string { return path.Join(ContainerDepDir, stage) }

// DepVar is the name of the variable that holds a dependency's OUT: DEP_OPENSSL.
func DepVar(stage string) string {
	return "DEP_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(stage))
}

// ContainerEnv is the whole environment of stage s in a container: the stage's Env, then the
// contract variables at the fixed container paths. JOBS is set only when the plan fixes it:
// otherwise ContainerScript takes it from the container's CPU count, so that the machine's
// core count is not part of any step's cache key.
func (p *Plan) ContainerEnv(s Stage) []EnvVar {
	env := append([]EnvVar(nil), s.Env...)
	env = append(env,
		EnvVar{"SRC", ContainerSrc(s)},
		EnvVar{"WORK", ContainerWorkDir},
		EnvVar{"OUT", ContainerOut(s.Name)},
	)
	for _, d := range s.Deps {
		env = append(env, EnvVar{DepVar(d), ContainerDep(d)})
	}
	if p.Jobs > 0 {
		env = append(env, EnvVar{"JOBS", strconv.Itoa(p.Jobs)})
	}
	return env
}

// containerJobs sets JOBS from the CPU count when the environment does not.
const containerJobs = `export JOBS="${JOBS:-$(nproc)}"` + "\n"

// ContainerScript is the program a container runs for stage s (under ContainerShell, in
// ContainerWorkDir, with ContainerEnv).
func ContainerScript(s Stage) string { return containerJobs + s.Script }

// ContainerCommand is the argv that runs stage s in a container.
func ContainerCommand(s Stage) []string {
	return append(append([]string(nil), ContainerShell...), ContainerScript(s))
}
