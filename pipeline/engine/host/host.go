// Package host runs a build plan on this machine: each stage's script under bash in a scratch
// directory, with a clean environment, its log captured to a file, and its output cached by
// a key over everything that affects it. It is the executor the tests use to build the real
// stack; production builds use the container executor (pipeline/engine/daggerexec) with the same plan.
package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// DefaultCacheDir is where stage outputs are cached when no WithCacheDir is given.
const DefaultCacheDir = "/var/cache/nginx-forge/build"

// Executor runs plans on the host.
type Executor struct {
	options
	workDir string
}

// New returns an executor.
func New(opts ...Option) *Executor {
	o := makeOptions(opts)
	// Stages build in <cache dir>/tmp: on the cache dir's file system, since finished
	// outputs are renamed into the cache.
	return &Executor{options: o, workDir: filepath.Join(o.cacheDir, "tmp")}
}

// Result is what a Run did.
type Result struct {
	// Tree is the install tree: the final stage's OUT, inside the cache. Treat it as
	// read-only; copy it (copyTree, as the engine adapter does) to change it.
	Tree   string
	Stages []StageResult
}

// StageResult is one stage's outcome.
type StageResult struct {
	Name   string
	Key    string // the cache key (hex sha256)
	Cached bool   // reused from the cache; the timings are then this run's (near zero)
	Out    string // the stage's OUT directory
	Log    string // the build log (kept in the cache next to OUT)
	Wall   time.Duration
	User   time.Duration // CPU time of the script and everything it waited for
	Sys    time.Duration
	// Built are the timings of the run that built the cached output (equal to Wall, User
	// and Sys when the stage was built by this run).
	Built Timing
}

// Timing is the wall and CPU time of one stage build.
type Timing struct {
	Wall time.Duration `json:"wall_ns"`
	User time.Duration `json:"user_ns"`
	Sys  time.Duration `json:"sys_ns"`
}

// Stage returns the named stage's result.
func (r *Result) Stage(name string) (StageResult, bool) {
	for _, s := range r.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return StageResult{}, false
}

// Run builds p from sources (component name -> path of its verified tarball) and returns
// the install tree. Before any stage runs it checks that every source is present with the
// checksum the plan pins and that the host has the plan's tools; on failure nothing has
// been created, not even the cache directory.
func (e *Executor) Run(ctx context.Context, p *plan.Plan, sources map[string]string) (*Result, error) {
	if err := engine.CheckSources(p, sources); err != nil {
		return nil, fmt.Errorf("host executor: %w", err)
	}
	return e.run(ctx, p, sources, progress.Discard)
}

// run builds a plan whose input was checked (Run, or engine.Checked around Engine.Build).

func (e *Executor) run(ctx context.Context, p *plan.Plan, sources map[string]string, steps progress.Sink) (*Result, error) {
	if p.Platform.OS != "linux" {
		return nil, fmt.Errorf("host executor: plan is for %s but this machine is linux/%s: plan for %s", p.Platform, runtime.GOARCH, plan.SupportedList())
	}
	// This machine is the builder: a plan for another architecture cross-compiles (see
	// plan.Cross); a native plan is run as it is.
	p, err := p.ForBuild(runtime.GOARCH)
	if err != nil {
		return nil, fmt.Errorf("host executor: %w", err)
	}
	if err := CheckTools(p); err != nil {
		return nil, err
	}
	if err := e.checkCacheDir(); err != nil {
		return nil, err
	}
	if err := checkEmulation(p); err != nil {
		return nil, err
	}
	cc, err := compilerVersion(p)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{e.cacheDir, e.workDir, filepath.Join(e.cacheDir, "stages"), filepath.Join(e.cacheDir, "locks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("host executor: creating %s: %w", d, err)
		}
	}
	jobs := e.jobs
	if jobs <= 0 {
		jobs = p.Jobs
	}
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}

	res := &Result{}
	keys := map[string]string{}
	outs := map[string]string{}
	for _, s := range p.Stages {
		key := stageKey(p, s, keys, cc)
		keys[s.Name] = key
		steps.Send(progress.StepStarted{Step: s.Name})
		sr, err := e.runStage(ctx, s, key, sources[s.Source.Component], outs, jobs, p.SourceDateEpoch)
		if err != nil {
			return res, err
		}
		cache := progress.Built
		if sr.Cached {
			cache = progress.Cached
		}
		steps.Send(progress.StepDone{Step: s.Name, Duration: sr.Wall, Cache: cache})
		outs[s.Name] = sr.Out
		res.Stages = append(res.Stages, sr)
	}
	res.Tree = outs[p.Final]
	return res, nil
}

// CheckTools reports, in one error, every tool and library of the plan the host lacks, with
// the apt-get command that installs them.
func CheckTools(p *plan.Plan) error {
	var missing []string
	pkgs := map[string]bool{}
	for _, t := range p.HostTools {
		if _, err := exec.LookPath(t.Command); err != nil {
			missing = append(missing, fmt.Sprintf("%s (package %s)", t.Command, t.Package))
			pkgs[t.Package] = true
		}
	}
	if _, err := exec.LookPath(p.CC()); err == nil {
		for _, l := range p.HostLibraries {
			out, err := exec.Command(p.CC(), "-print-file-name="+l.Command).Output()
			if err != nil || !filepath.IsAbs(strings.TrimSpace(string(out))) {
				missing = append(missing, fmt.Sprintf("%s (package %s)", l.Command, l.Package))
				pkgs[l.Package] = true
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	list := make([]string, 0, len(pkgs))
	for p := range pkgs {
		list = append(list, p)
	}
	sort.Strings(list)
	if p.Cross != nil {
		return fmt.Errorf("host executor: missing build tools to cross-compile for %s: %s: run `apt-get install %s` (a NAME:%s package needs `dpkg --add-architecture %s` and `apt-get update` first; .ci/install-deps does all of it)",
			p.Platform, strings.Join(missing, ", "), strings.Join(list, " "), p.Platform.Arch, p.Platform.Arch)
	}
	return fmt.Errorf("host executor: missing build tools: %s: run `apt-get install %s`",
		strings.Join(missing, ", "), strings.Join(list, " "))
}

// compilerVersion identifies the toolchain for the cache key: a new compiler may produce
// different code from the same inputs.
func compilerVersion(p *plan.Plan) (string, error) {
	var b strings.Builder
	ld := "ld"
	if p.Cross != nil {
		ld = p.Cross.Triple + "-ld"
	}
	for _, args := range [][]string{{p.CC(), "--version"}, {ld, "--version"}} {
		out, err := exec.Command(args[0], args[1:]...).Output()
		if err != nil {
			return "", fmt.Errorf("host executor: running `%s`: %w", strings.Join(args, " "), err)
		}
		line, _, _ := strings.Cut(string(out), "\n")
		b.WriteString(line + "\n")
	}
	return b.String(), nil
}

// keyVersion changes when the executor itself changes what a stage's output means.
const keyVersion = "nginx-forge host stage v1"

// stageKey hashes everything that can change a stage's output: the script, environment and
// files, the source's pin (its SHA-256, or its git commit and tree), the epoch, the keys of
// the stages it reads, the toolchain and the platform. JOBS is left out on purpose:
// parallelism does not change what is built.
//
// It need not hash the prepared archive the stage reads (pipeline/source): that archive is a
// deterministic function of the pin and the epoch, both in the key (a SHA-256 source keeps
// its archive's bytes' own metadata, which the digest covers; a git source gets only what its
// tree covers, with the epoch's time: source's TestGitSourcePreparedArchiveIsAFunctionOfThePinAndTheEpoch),
// and each stage reads a private copy checked against the digest engine.CheckSources saw
// (engine.PrivateSource), so bytes other than that function's never reach a stage, let alone
// a cached output under this key.
func stageKey(p *plan.Plan, s plan.Stage, keys map[string]string, cc string) string {
	h := sha256.New()
	field := func(name, value string) {
		fmt.Fprintf(h, "%s %d\n%s\n", name, len(value), value)
	}
	field("version", keyVersion)
	field("platform", p.Platform.String())
	field("stage", s.Name)
	field("script", s.Script)
	for _, e := range s.Env {
		field("env", e.Name+"="+e.Value)
	}
	field("source_date_epoch", strconv.FormatInt(p.SourceDateEpoch, 10))
	for _, f := range s.Files {
		sum := sha256.Sum256(f.Data)
		field("file", fmt.Sprintf("%s %o %x", f.Path, f.Mode, sum))
	}
	field("source", s.Source.FileName+" "+s.Source.Pin())
	for _, d := range s.Deps {
		field("dep", d+" "+keys[d])
	}
	field("compiler", cc)
	return hex.EncodeToString(h.Sum(nil))
}

// meta is stored next to a cached OUT.
type meta struct {
	Stage string `json:"stage"`
	Key   string `json:"key"`
	Timing
}

func (e *Executor) runStage(ctx context.Context, s plan.Stage, key, src string, outs map[string]string, jobs int, epoch int64) (StageResult, error) {
	final := filepath.Join(e.cacheDir, "stages", key)
	sr := StageResult{Name: s.Name, Key: key, Out: filepath.Join(final, "out"), Log: filepath.Join(final, "build.log")}
	start := time.Now()

	unlock, err := toolbox.Lock(ctx, filepath.Join(e.cacheDir, "locks", key+".lock"))
	if err != nil {
		return sr, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	defer unlock()

	if m, ok := e.reuse(s.Name, key, final); ok {
		sr.Cached = true
		sr.Wall = time.Since(start)
		sr.Built = m.Timing
		e.sink.Send(progress.Detailf("stage %s: cached (key %s)", s.Name, key[:12]))
		return sr, nil
	}
	tmp, err := e.scratchDir(key, s.Name)
	if err != nil {
		return sr, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	defer os.RemoveAll(tmp)
	if src, err = engine.PrivateSource(filepath.Join(tmp, "src"), src); err != nil {
		return sr, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	work, out, logPath := filepath.Join(tmp, "work"), filepath.Join(tmp, "out"), filepath.Join(tmp, "build.log")
	// The compilers' temporary files go under the scratch directory, which goes when the
	// stage ends: a compiler killed mid-file (a cancelled build) cannot clean up its own.
	tmpDir := filepath.Join(tmp, "tmp")
	script, err := writeStageInputs(tmp, work, out, tmpDir, s)
	if err != nil {
		return sr, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return sr, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	defer logFile.Close()
	env := stageEnv(s, epoch, src, work, out, tmpDir, jobs, outs)
	e.sink.Send(progress.Detailf("stage %s: building (key %s, log %s)", s.Name, key[:12], logPath))
	ps, runErr := runScript(ctx, script, work, env, logFile)
	sr.Wall = time.Since(start)
	if ps != nil {
		// wait4's rusage of bash includes every descendant it waited for (make, cc, ...).
		sr.User, sr.Sys = ps.UserTime(), ps.SystemTime()
	}
	sr.Built = Timing{Wall: sr.Wall, User: sr.User, Sys: sr.Sys}
	if runErr != nil {
		if ctx.Err() != nil {
			// Interrupted, not failed: there is nothing in the log to keep.
			return sr, fmt.Errorf("stage %s: interrupted after %s: %w", s.Name, sr.Wall.Round(time.Second), ctx.Err())
		}
		kept := e.keepFailedLog(s.Name, logPath)
		tail := toolbox.FileTail(logPath, 40)
		return sr, fmt.Errorf("stage %s failed after %s: %w (log: %s)\n--- last lines of the log ---\n%s",
			s.Name, sr.Wall.Round(time.Second), runErr, kept, tail)
	}
	if err := commitStage(tmp, final, meta{Stage: s.Name, Key: key, Timing: sr.Built}); err != nil {
		return sr, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	e.sink.Send(progress.Detailf("stage %s: built in %s (user %s sys %s)", s.Name, sr.Wall.Round(time.Second),
		sr.User.Round(time.Second), sr.Sys.Round(time.Second)))
	return sr, nil
}

// scratchDir makes a fresh directory for one build of the stage with key. Scratch
// directories are named after the key, and the key's lock is held: any other directory of
// this key is left over from a killed run, and goes.
func (e *Executor) scratchDir(key, stage string) (string, error) {
	prefix := key[:16] + "-" + stage + "-"
	if stale, _ := filepath.Glob(filepath.Join(e.workDir, prefix+"*")); len(stale) > 0 {
		for _, d := range stale {
			os.RemoveAll(d)
		}
	}
	return os.MkdirTemp(e.workDir, prefix)
}

// writeStageInputs makes WORK (with the stage's files), OUT and the script's TMPDIR, and
// writes the script into tmp; it returns the script's path.
func writeStageInputs(tmp, work, out, tmpDir string, s plan.Stage) (string, error) {
	for _, d := range []string{work, out, tmpDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", err
		}
	}
	for _, f := range s.Files {
		p := filepath.Join(work, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("writing %s: %w", f.Path, err)
		}
		if err := os.WriteFile(p, f.Data, os.FileMode(f.Mode)); err != nil {
			return "", fmt.Errorf("writing %s: %w", f.Path, err)
		}
	}
	script := filepath.Join(tmp, "script.sh")
	return script, os.WriteFile(script, []byte(s.Script), 0o644)
}

// stageEnv is the script's whole environment: a fixed base, the stage's variables, then the
// contract's SRC, WORK, OUT, JOBS and DEP_<NAME>.
func stageEnv(s plan.Stage, epoch int64, src, work, out, tmpDir string, jobs int, outs map[string]string) []string {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + work,
		"TMPDIR=" + tmpDir,
		"LANG=C",
		"TZ=UTC",
		"SOURCE_DATE_EPOCH=" + strconv.FormatInt(epoch, 10),
	}
	for _, v := range s.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	env = append(env, "SRC="+src, "WORK="+work, "OUT="+out, "JOBS="+strconv.Itoa(jobs))
	for _, d := range s.Deps {
		env = append(env, plan.DepVar(d)+"="+outs[d])
	}
	return env
}

// runScript runs the script with bash (-euo pipefail) in work, its output into logFile, and
// returns the process state (nil when it never ran) with its error.
func runScript(ctx context.Context, script, work string, env []string, logFile *os.File) (*os.ProcessState, error) {
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", script)
	cmd.Dir = work
	cmd.Env = env
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// A process group, so cancelling kills make and every compiler, not just bash.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	return cmd.ProcessState, err
}

// keepFailedLog copies a failed stage's log under a name of its own (the failure's time),
// so the log of the failure before is not overwritten; only the newest keepFailedLogs stay.
// It returns the kept log's path.
func (e *Executor) keepFailedLog(stage, logPath string) string {
	kept := filepath.Join(e.cacheDir, fmt.Sprintf("failed-%s-%s.log", stage, time.Now().UTC().Format("20060102T150405.000Z")))
	_ = copyFile(logPath, kept, 0o644)
	if err := pruneFailedLogs(e.cacheDir, keepFailedLogs); err != nil {
		e.sink.Send(progress.Detailf("stage %s: %v", stage, err))
	}
	return kept
}

// commitStage stores a built stage in the cache: meta.json written, the scratch WORK gone,
// then tmp renamed to final. The rename is the commit: a cache entry either has everything
// or does not exist.
func commitStage(tmp, final string, m meta) error {
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), b, 0o644); err != nil {
		return err
	}
	for _, d := range []string{"work", "src"} {
		if err := os.RemoveAll(filepath.Join(tmp, d)); err != nil {
			return fmt.Errorf("removing its scratch directory: %w", err)
		}
	}
	if err := writeManifest(tmp); err != nil {
		return fmt.Errorf("writing its manifest: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("storing its output in the cache: %w", err)
	}
	return nil
}

// keepFailedLogs is how many failed-*.log files the cache keeps, newest first.
const keepFailedLogs = 5

// pruneFailedLogs removes all but the newest keep failed-*.log files in dir.
func pruneFailedLogs(dir string, keep int) error {
	logs, err := filepath.Glob(filepath.Join(dir, "failed-*.log"))
	if err != nil || len(logs) <= keep {
		return err
	}
	type entry struct {
		path string
		mod  time.Time
	}
	var es []entry
	for _, p := range logs {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			es = append(es, entry{p, fi.ModTime()})
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if !es[i].mod.Equal(es[j].mod) {
			return es[i].mod.After(es[j].mod)
		}
		return es[i].path > es[j].path
	})
	var errs []error
	for i := keep; i < len(es); i++ {
		if err := os.Remove(es[i].path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing old failed logs: %w", errors.Join(errs...))
	}
	return nil
}

func readMeta(dir string) (meta, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return meta{}, false
	}
	var m meta
	if json.Unmarshal(b, &m) != nil {
		return meta{}, false
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err != nil {
		return meta{}, false
	}
	return m, true
}
