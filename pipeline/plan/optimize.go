package plan

import (
	"fmt"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Optimization modes (WithOptimize, Plan.Optimize).
//
//   - none: the flags in flags.go only; every stage compiles and links on its own.
//   - lto: link-time optimization. Every stage compiles with -flto=auto (GIMPLE in the objects,
//     "auto" lets GCC run the link-time jobs in parallel; the output does not depend on how
//     many), the static libraries are made with gcc-ar/gcc-ranlib (AR, RANLIB, NM in the
//     stages' environment; zlib's and zlib-ng's configure, PCRE2's libtool and OpenSSL's
//     Configure read them; AWS-LC's CMake is given them as CMAKE_AR and CMAKE_RANLIB), and
//     nginx's link optimizes the whole program: nginx, the TLS library, PCRE2, zlib.
//     nginx links with -Wl,-E (its dynamic modules need the symbols), which keeps every
//     global symbol alive: LTO inlines across files and libraries but removes little.
//   - pgo: lto plus GCC's profile-guided optimization of nginx and the stack's profiled
//     libraries (stack.profiled: OpenSSL in the default stack; zlib-ng, PCRE2 and AWS-LC in
//     the variant), from a profile that is either recorded in the lock or trained during the
//     build:
//     recorded (lock: profiles, made by `ci pgo-profile`; the plan's TrainingKey must match
//     the recorded one): stage pgo-profile unpacks it, and the profiled libraries' stages and
//     nginx build as in lto with -fprofile-use and the profile copied next to each object
//     file. The same lock then gives the same binary.
//     trained (no matching recorded profile; NOT reproducible, see Plan.Warnings): stage
//     <library>-instrumented builds each profiled library with -fprofile-generate; stage
//     pgo-train builds nginx the same way against them, runs it on loopback with a fixed
//     workload (files/train/train.sh) and keeps only the profile
//     (OUT/pgo/{<library>...,nginx}/*.gcda and OUT/pgo/compiler); the libraries and nginx
//     then use it as above. `ci pgo-profile` runs the plan up to pgo-train (NewTraining) and
//     records its output.
//     Either way the profile travels as a stage output, so every engine (host, Dagger, the
//     Dockerfile) runs the same steps.
//
// Profile paths: the instrumented objects write their counters to /pgo/<component>/<object
// path relative to the source directory, '/' as '#'>.gcda (-fprofile-generate=DIR with
// -fprofile-prefix-path=$WORK/src), redirected under the stage's directory by GCOV_PREFIX,
// so no executor path is in any profile file name. The optimized build reads them with a
// plain -fprofile-use, which looks for <object>.gcda beside each object: no path is in its
// flags either (OpenSSL records its CFLAGS in the library, nginx its --with-cc-opt).
//
// auto (the default) is pgo when the lock records a profile for the plan's training key, and
// none otherwise: pgo from a recorded profile measured fastest without costing any scenario
// (pipeline/bench/MEASUREMENTS.md, optimization modes), lto did not measurably beat none,
// and a build that trains for itself is not reproducible, so the default never trains.
const (
	OptimizeAuto = "auto"
	OptimizeNone = "none"
	OptimizeLTO  = "lto"
	OptimizePGO  = "pgo"
)

// OptimizeModes are the accepted WithOptimize values.
var OptimizeModes = []string{OptimizeAuto, OptimizeNone, OptimizeLTO, OptimizePGO}

// DefaultOptimize is the mode when none is asked for.
const DefaultOptimize = OptimizeAuto

// WithOptimize sets the optimization mode: auto, none, lto or pgo ("" keeps DefaultOptimize).
// Plan.Optimize is the mode the plan builds with: auto resolves to pgo or none.
func WithOptimize(mode string) Option {
	return func(o *options) error {
		if mode == "" {
			mode = DefaultOptimize
		}
		for _, m := range OptimizeModes {
			if m == mode {
				o.optimize = mode
				return nil
			}
		}
		return fmt.Errorf("optimize %q: use one of %s", mode, strings.Join(OptimizeModes, ", "))
	}
}

// Stage names of the pgo mode.
const (
	stageOpenSSLInstrumented = "openssl-instrumented" // instrumentedStage(lock.OpenSSL)
	StagePGOTrain            = "pgo-train"
)

// ltoFlag is added to every compile and to nginx's link in the lto and pgo modes.
const ltoFlag = "-flto=auto"

// ltoTools make the static libraries with the LTO plugin (an archive index of GIMPLE objects).
var ltoTools = []EnvVar{{"AR", "gcc-ar"}, {"RANLIB", "gcc-ranlib"}, {"NM", "gcc-nm"}}

// profileGenerate is -fprofile-generate writing to /pgo/<component> (see above). The counters
// are updated without atomics: the training server is one single-threaded process.
func profileGenerate(component string) string {
	return "-fprofile-generate=/pgo/" + component
}

// profileUse: the profile beside each object; functions the training never ran are
// optimized as without a profile (-fprofile-partial-training), not for size as cold code,
// and objects without a profile (nginx's configure tests, code the workload never reaches)
// are not warned about. -fprofile-correction smooths the counters' small inconsistencies
// (a process that exits while a counter update is in flight). Reproducibility does not
// rest on these flags: it needs the same profile, which a recorded one is.
const profileUse = "-fprofile-use -fprofile-partial-training -fprofile-correction -Wno-missing-profile"

// profileUseAbsPaths is added to profileUse for the libraries whose builds compile sources by
// absolute path (zlib-ng's per-architecture makefiles, AWS-LC's CMake; PCRE2's libtool, for
// the same flags on the three): GCC checksums a function's source locations with the file
// name as compiled, before -ffile-prefix-map, and the host engine builds each stage in a
// directory of its own, so the instrumented and the optimizing builds name the same file
// differently. GCC then still uses the counters (only a changed control flow discards them)
// but, by default, fails the compile; this keeps that a warning. OpenSSL and nginx compile
// by relative paths and do not need it.
const profileUseAbsPaths = "-Wno-error=coverage-mismatch"

// gcovPrefixBuild keeps what programs compiled during a build (nginx's configure tests)
// write away from /pgo: GCOV_PREFIX is prepended to the profile path at run time.
const gcovPrefixBuild = `export GCOV_PREFIX="$WORK/gcov-build"
`

// profileCopy copies component's profile from the stage that holds it (pgo-train or
// pgo-profile) beside the objects it belongs to (the file name is the object path with '/'
// as '#'). Runs in the source directory.
func profileCopy(component, stage string) string {
	return `# The profile (stage ` + stage + `): each <object>.gcda beside its object, where -fprofile-use
# looks for it.
for f in "$` + DepVar(stage) + `/pgo/` + component + `"/*.gcda; do
  n=${f##*/}
  install -D -m 0644 "$f" "${n//'#'//}"
done
`
}

// instrumentedStage is the name of library name's instrumented stage ("openssl-instrumented").
func instrumentedStage(name string) string { return name + "-instrumented" }

// instrumentedScript is a library's script with the counters' path prefix.
func instrumentedScript(script string) string {
	return prelude + gcovPrefixBuild + `export CFLAGS="$CFLAGS -fprofile-prefix-path=$WORK/src"
` + strings.TrimPrefix(script, prelude)
}

// profileScript is component's script with its profile from stage in place.
func profileScript(component, stage, script string) string {
	return prelude + profileCopy(component, stage) + strings.TrimPrefix(script, prelude)
}

// pgoTrainScript builds the instrumented nginx (configured exactly as the final one) and runs
// the training; OUT gets the profile only.
func pgoTrainScript(st stack, moduleFlags, moduleNames []string) string {
	build, _ := nginxBuild(st, moduleFlags, moduleNames)
	libs := st.profiled()
	var link strings.Builder
	if len(libs) == 1 && libs[0] == lock.OpenSSL {
		link.WriteString("# nginx is linked against the instrumented OpenSSL.\n")
	} else {
		link.WriteString("# nginx is linked against the instrumented libraries.\n")
	}
	for _, name := range libs {
		fmt.Fprintf(&link, "export %s=\"$%s\"\n", DepVar(name), DepVar(instrumentedStage(name)))
	}
	return prelude + gcovPrefixBuild + link.String() + `export NGINX_CC_OPT="$NGINX_CC_OPT -fprofile-prefix-path=$WORK/src"
` + build + `make -j"$JOBS"
export GCOV_PREFIX="$WORK/gcov"
. "$WORK/files/train/train.sh"
# Keep the profile only, and the compiler that can read it (a recorded profile is checked
# against the builder's: stage pgo-profile).
mkdir -p` + pgoDirs(libs) + `
for c in ` + strings.Join(append(append([]string(nil), libs...), lock.Nginx), " ") + `; do
  ls "$WORK/gcov/pgo/$c"/*.gcda > /dev/null
  cp "$WORK/gcov/pgo/$c"/*.gcda "$OUT/pgo/$c/"
done
` + compilerLine + ` > "$OUT/pgo/compiler"
` + epilogue
}

// pgoDirs are the profile's directories in OUT, one per profiled component, as the
// training's mkdir names them.
func pgoDirs(libs []string) string {
	var b strings.Builder
	for _, c := range append(append([]string(nil), libs...), lock.Nginx) {
		fmt.Fprintf(&b, ` "$OUT/pgo/%s"`, c)
	}
	return b.String()
}

// stagePGOProfile unpacks a recorded profile (lock: profiles).
const stagePGOProfile = "pgo-profile"

// compilerLine prints what a profile's counters are tied to: GCC reads only the .gcda
// format of its own version, and silently optimizes without a profile it cannot read.
const compilerLine = `echo "$(cc -dumpfullversion) $(cc -dumpmachine)"`

// pgoProfileScript unpacks the recorded profile into OUT as stage pgo-train leaves it, and
// stops when the builder's compiler is not the one the profile was trained with.
const pgoProfileScript = `umask 022
tar -xf "$SRC" -C "$OUT" --no-same-owner
want=$(cat "$OUT/pgo/compiler")
have=$(` + compilerLine + `)
if [ "$want" != "$have" ]; then
  echo "the lock's recorded PGO profile was trained with gcc $want; this builder has gcc $have, which cannot read it. Record a profile with this builder (go run ./ci pgo-profile --write ...) or build with --optimize lto" >&2
  exit 1
fi
` + epilogue
