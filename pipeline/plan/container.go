package plan

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
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
// It writes a record like a stage's (ContainerBuilderRecord), so the setup's cache hit and
// time are reported like a stage's.
func (p *Plan) ContainerSetupScript() string {
	cross := ""
	if p.Cross != nil {
		cross = "dpkg --add-architecture " + p.Platform.Arch + "\n" +
			p.Cross.crossAptSplit(p.Platform.Arch, ContainerAptDir, ContainerTargetAptDir)
	}
	return recordStart + `rm -f /etc/apt/apt.conf.d/docker-clean
` + cross + `echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' > /etc/apt/apt.conf.d/keep-cache
` + p.snapshotLine() + `export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends ` + strings.Join(p.BuildPackages, " ") + "\n" +
		recordEnd(ContainerBuilderRecord)
}

// containerSnapshotConf is the apt configuration file the setup writes when the lock pins
// the builder's archive snapshot.
const containerSnapshotConf = "/etc/apt/apt.conf.d/nginx-forge-snapshot"

// snapshotLine makes every later apt-get in the builder read the archive as it was at
// BuilderSnapshot, through apt's own APT::Snapshot option (apt 2.7 and later, Ubuntu
// 24.04's): apt maps each source to its distribution's snapshot service itself, so no
// service's address is written here, and a newer upload to the live archive cannot change
// the compiler a lock installs. Empty without a snapshot, so the setup of a lock without
// one (and its cache key) stays what it was.
func (p *Plan) snapshotLine() string {
	if p.BuilderSnapshot == "" {
		return ""
	}
	return `echo 'APT::Snapshot "` + p.BuilderSnapshot + `";' > ` + containerSnapshotConf + "\n"
}

// ContainerSetupCommand is the argv that runs ContainerSetupScript.
func (p *Plan) ContainerSetupCommand() []string {
	return append(append([]string(nil), ContainerShell...), p.ContainerSetupScript())
}

// ContainerSrc is SRC for stage s in a container: the packed verified source under ContainerSrcDir.
func ContainerSrc(s Stage) string { return path.Join(ContainerSrcDir, s.Source.FileName) }

// ContainerOut is the OUT of the named stage in a container.
func ContainerOut(stage string) string { return path.Join(containerOutDir, stage) }

// ContainerDep is where a dependency's OUT is mounted for a later stage (DEP_<NAME>).
func ContainerDep(stage string) string { return path.Join(containerDepDir, stage) }

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
// ContainerWorkDir, with ContainerEnv): the stage's script between the two halves of the
// stage record (see ContainerStageRecord).
func ContainerScript(s Stage) string {
	script := s.Script
	if !strings.HasSuffix(script, "\n") {
		script += "\n"
	}
	return containerJobs + recordStart + script + recordEnd(ContainerStageRecord)
}

// ContainerStageRecord is a file each container stage writes outside its OUT when its
// script succeeded: the run that built it (StageRunVar), its wall time and the CPU time of
// the shell and its children (bash's `times`). A Dagger engine tells its SDK nothing about
// which steps it took from its cache, but a cached step's file is the one the building run
// wrote: the Dagger executor sets StageRunVar to a value of its own, which the engine leaves
// out of the step's cache key (a volatile variable), and reads the file back after the
// stage: its own value means the stage was built now, another one that it came from the
// cache, with the times of the run that built it. The file is in WORK, not OUT, so no
// later stage and no image sees it; the rendered Dockerfile runs the same script and
// writes it too (with an empty run).
const ContainerStageRecord = ContainerWorkDir + "/.nginx-forge-stage"

// StageRunVar is the variable a container executor may set to name its run in the stage
// record.
const StageRunVar = "NGINX_FORGE_RUN"

// ContainerBuilderRecord is the stage record of ContainerSetupScript, in the builder's root
// (a stage's WORK starts empty, so the two never meet).
const ContainerBuilderRecord = "/.nginx-forge-builder"

// recordStart and recordEnd wrap a script so that it writes a stage record to path when
// it succeeds (a failure ends the script before, under -e).
const recordStart = "nginx_forge_start=$EPOCHREALTIME\n"

func recordEnd(path string) string {
	return "{ printf 'run %s\\nwall %s %s\\n' \"${" + StageRunVar + ":-}\" \"$nginx_forge_start\" \"$EPOCHREALTIME\"; times; } >" + path + "\n"
}

// StageRecord is a parsed ContainerStageRecord.
type StageRecord struct {
	Run             string
	Wall, User, Sys time.Duration
}

// ParseStageRecord reads what ContainerScript wrote to ContainerStageRecord.
func ParseStageRecord(data string) (StageRecord, error) {
	var r StageRecord
	lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
	if len(lines) != 4 {
		return r, fmt.Errorf("stage record %q: want 4 lines (run, wall, and the two lines of bash's times), got %d", data, len(lines))
	}
	run, ok := strings.CutPrefix(lines[0], "run ")
	switch {
	case ok:
		r.Run = run
	case lines[0] != "run":
		return r, fmt.Errorf("stage record %q: first line is not \"run ID\"", data)
	}
	var start, end float64
	if _, err := fmt.Sscanf(lines[1], "wall %f %f", &start, &end); err != nil || end < start {
		return r, fmt.Errorf("stage record %q: second line is not \"wall START END\" (EPOCHREALTIME seconds)", data)
	}
	r.Wall = time.Duration((end - start) * float64(time.Second))
	// `times`: the shell's user and system time, then its children's ("1m2.345s 0m0.250s").
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			return r, fmt.Errorf("stage record %q: %q is not a line of bash's times", data, l)
		}
		u, err1 := parseTimes(f[0])
		s, err2 := parseTimes(f[1])
		if err := errors.Join(err1, err2); err != nil {
			return r, fmt.Errorf("stage record %q: %w", data, err)
		}
		r.User += u
		r.Sys += s
	}
	return r, nil
}

// parseTimes reads one of bash's `times` values: "1m2.345s".
func parseTimes(v string) (time.Duration, error) {
	var m int
	var s float64
	if _, err := fmt.Sscanf(v, "%dm%fs", &m, &s); err != nil {
		return 0, fmt.Errorf("%q is not a time as bash's times prints it (1m2.345s)", v)
	}
	return time.Duration(m)*time.Minute + time.Duration(s*float64(time.Second)), nil
}

// ContainerCommand is the argv that runs stage s in a container.
func ContainerCommand(s Stage) []string {
	return append(append([]string(nil), ContainerShell...), ContainerScript(s))
}
