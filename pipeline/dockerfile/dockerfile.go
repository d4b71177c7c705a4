// Package dockerfile renders the build plan as a multi-stage Dockerfile, for people without
// Dagger (docker build, buildx, BuildKit). It consumes the plan the way an engine does:
// every stage's environment, files and script come from pipeline/plan's container helpers,
// the same ones the Dagger engine maps to container steps, and nothing of the recipe is
// written here.
package dockerfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// syntax pins the BuildKit frontend: heredocs (RUN <<EOF, COPY <<EOF) need 1.4+,
// ADD --checksum for URLs 1.6+.
const syntax = "docker/dockerfile:1.7"

// heredocEnd closes every heredoc in the rendered file; Render refuses content
// that contains it as a line.
const heredocEnd = "NGINX_FORGE_EOF"

// The build args of the rendered Dockerfile.
const (
	argBuilderImage = "BUILDER_IMAGE"
	argRuntimeImage = "RUNTIME_IMAGE"
	argCPU          = "CPU"
)

// Request is a rendering of a lock for a platform, CPU level and module set, as `ci
// dockerfile` takes them; Mirror, when set, makes every ADD fetch Mirror/<file name>.
type Request struct {
	Platform    plan.Platform // the zero Platform is plan.DefaultPlatform
	CPU, Mirror string
	Optimize    string   // plan.WithOptimize's mode; "" is the default
	Modules     []string // nil: the default set
	// LockDir is the lock file's directory relative to the build context (the repository
	// root), where a profile the lock keeps in the repository is copied from ("" is
	// pipeline/lock, the default lock's).
	LockDir string
}

// RenderLock plans l as r asks and renders it; the plan's warnings come back with it.
func RenderLock(l *lock.Lock, r Request) ([]byte, []string, error) {
	opts := []plan.Option{plan.WithCPU(r.CPU), plan.WithOptimize(r.Optimize)}
	if r.Platform != (plan.Platform{}) {
		opts = append(opts, plan.WithPlatform(r.Platform))
	}
	if r.Modules != nil {
		opts = append(opts, plan.WithModules(r.Modules...))
	}
	p, err := plan.New(l, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrPlan, err)
	}
	var ropts []Option
	if r.Mirror != "" {
		ropts = append(ropts, withSourceMirror(r.Mirror))
	}
	if r.LockDir != "" {
		ropts = append(ropts, withLockDir(r.LockDir))
	}
	b, err := Render(p, l, ropts...)
	return b, p.Warnings, err
}

// ErrPlan is returned (wrapped) when the request cannot be planned (an unknown module,
// CPU level or platform).
var ErrPlan = errors.New("planning the build")

// Render renders p as a multi-stage Dockerfile for people without Dagger: one
// stage per plan stage, each FROM the builder with the build packages installed, with the
// same environment, files and script as the Dagger executor runs (ContainerEnv,
// ContainerScript), then a final stage FROM the runtime image with Runtime's configuration.
// l gives the upstream URLs (the plan knows files by name and checksum only) and the
// runtime image.
//
// The CPU level reaches the compiler through the CPU build arg: every "-march=<p.CPU>" in
// the stages' environment is rendered as "-march=${CPU}", and rendering fails when the
// level appears anywhere the arg cannot reach (a script) or nowhere at all.
func Render(p *plan.Plan, l *lock.Lock, opts ...Option) ([]byte, error) {
	r := &renderer{p: p, l: l}
	for _, opt := range opts {
		opt(&r.o)
	}
	final, ok := p.Stage(p.Final)
	if !ok {
		return nil, fmt.Errorf("rendering the Dockerfile: the final stage %q is not in the plan", p.Final)
	}
	if err := checkMirror(r.o.mirror); err != nil {
		return nil, fmt.Errorf("rendering the Dockerfile: %w", err)
	}
	r.march = regexp.MustCompile(`-march=` + regexp.QuoteMeta(p.CPU) + `(\s|$)`)
	r.header()
	if err := r.builderStage(); err != nil {
		return nil, err
	}
	for _, s := range p.Stages {
		if err := r.stage(s); err != nil {
			return nil, fmt.Errorf("rendering stage %s: %w", s.Name, err)
		}
	}
	if !r.march.MatchString(envValues(p)) {
		return nil, fmt.Errorf("rendering the Dockerfile: no stage's environment contains -march=%s, so the %s build arg would change nothing", p.CPU, argCPU)
	}
	r.imageStages(final)
	return []byte(r.b.String()), nil
}

// renderer is one Dockerfile being written from a plan and its lock.
type renderer struct {
	b     strings.Builder
	p     *plan.Plan
	l     *lock.Lock
	o     options
	march *regexp.Regexp // -march=<the plan's CPU level>, which the CPU build arg replaces
}

func (r *renderer) w(format string, a ...any) { fmt.Fprintf(&r.b, format, a...) }

// checkMirror refuses a mirror Render cannot use: not plain http(s), or one carrying
// credentials.
func checkMirror(mirror string) error {
	if mirror == "" {
		return nil
	}
	if err := lock.CheckPlainURL(mirror); err != nil {
		return fmt.Errorf("mirror: %v: %w", err, ErrMirrorURL)
	}
	if u, err := url.Parse(mirror); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("mirror %q: %w", safeio.RedactURL(mirror), ErrMirrorURL)
	} else if u.User != nil {
		// The Dockerfile is committed and printed: a password in it would be published.
		return fmt.Errorf("mirror %q carries user information (user:password@), which would be written into the Dockerfile: give a mirror without credentials (BuildKit has none to send for ADD): %w", safeio.RedactURL(mirror), ErrMirrorURL)
	}
	return nil
}

// header writes the comment that says what the file is and how to use it, and the build
// args with their defaults.
func (r *renderer) header() {
	p := r.p
	r.w("# syntax=%s\n", syntax)
	r.w(`# Code generated by "go run ./ci dockerfile"; DO NOT EDIT. It is rendered from the same
# plan (pipeline/plan) the Go pipeline runs, and a golden test fails when they differ:
# regenerate with "go run ./ci dockerfile -o dockerfiles/Dockerfile".
#
# For building without Dagger (docker, podman, buildah: any BuildKit-compatible builder):
#
#   docker build -f dockerfiles/Dockerfile -t nginx-forge .
#   docker build -f dockerfiles/Dockerfile --build-arg CPU=x86-64-v2 -t nginx-forge .
#
# Rendered for %s with modules: %s.
# Sources are verified by their SHA-256 only (ADD --checksum, pinned in the lock). The PGP
# signatures are verified only by the Go pipeline ("go run ./ci build"), which also
# smoke-tests the image, writes its SBOM and reproducible layer, and pushes it.
#
# Build args:
#   %s  the image the build runs in (its glibc must not be newer than the runtime's)
#   %s  the image nginx runs in (glibc-based, e.g. distroless base-nossl-debian13)
#   %s  the -march level: %s;
#       "native" targets the build machine's CPU and may crash (SIGILL) elsewhere
`, p.Platform, strings.Join(p.Modules, " "), argBuilderImage, argRuntimeImage, argCPU, cpuNames(p.Platform.Arch))
	if r.o.mirror != "" {
		r.w("#\n# Sources are fetched from the mirror %s, not upstream (same checksums).\n", r.o.mirror)
	}
	r.w("\nARG %s=%s\n", argBuilderImage, p.BuilderImage)
	r.w("ARG %s=%s\n", argRuntimeImage, r.l.Images.Runtime.Pinned())
	r.w("ARG %s=%s\n", argCPU, p.CPU)
}

// withGit is p, or a copy of it whose build packages include git when a stage's source is
// git-pinned: the rendering checks such a source's tree with git in the builder (gitSource),
// where the engines check it in Go. The plan's own list adds git only for the sources of the
// stages before nginx, so a lock that pins nginx alone by git (the test twin) would render a
// builder without it.
func withGit(p *plan.Plan) *plan.Plan {
	if slices.Contains(p.BuildPackages, "git") {
		return p
	}
	for _, s := range p.Stages {
		if s.Source.Tree != "" {
			c := *p
			c.BuildPackages = append(slices.Clone(p.BuildPackages), "git")
			return &c
		}
	}
	return p
}

// builderStage writes the builder: build packages installed once, through cache mounts.
func (r *renderer) builderStage() error {
	r.w("\nFROM ${%s} AS builder\n", argBuilderImage)
	shell, _ := json.Marshal(plan.ContainerShell)
	r.w("SHELL %s\n", shell)
	r.w("RUN")
	for _, dir := range plan.ContainerAptCacheDirs {
		r.w(" --mount=type=cache,target=%s,sharing=locked", dir)
	}
	if err := heredoc(&r.b, " ", withGit(r.p).ContainerSetupScript()); err != nil {
		return fmt.Errorf("rendering the builder stage: %w", err)
	}
	return nil
}

// stage writes one plan stage: its source (checked against the lock), the outputs of its
// dependencies, its files, its environment (the CPU level as the build arg) and its script.
func (r *renderer) stage(s plan.Stage) error {
	c, ok := r.l.Input(s.Source.Component)
	if !ok || c.SHA256 != s.Source.SHA256 || c.FileName() != s.Source.FileName || (c.Git != nil && c.Git.Tree != s.Source.Tree) {
		return fmt.Errorf("the lock has no component or recorded profile %q with file %s and sha256 %s (plan and lock differ: render the plan made from this lock)",
			s.Source.Component, s.Source.FileName, s.Source.SHA256)
	}
	if r.march.MatchString(s.Script) {
		return fmt.Errorf("its script names -march=%s itself, which the %s build arg cannot change: the plan must pass the CPU level through the environment", r.p.CPU, argCPU)
	}
	r.w("\nFROM builder AS %s\n", s.Name)
	r.w("ARG %s\n", argCPU)
	r.source(c, s)
	for _, d := range s.Deps {
		r.w("COPY --from=%s %s/ %s/\n", d, plan.ContainerOut(d), plan.ContainerDep(d))
	}
	for _, f := range s.Files {
		r.w("COPY --chmod=%04o", f.Mode)
		if err := heredoc(&r.b, " ", string(f.Data), " "+plan.ContainerWorkDir+"/"+f.Path); err != nil {
			return fmt.Errorf("file %s: %w", f.Path, err)
		}
	}
	r.w("ENV")
	for i, e := range r.p.ContainerEnv(s) {
		v := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`).Replace(e.Value)
		v = r.march.ReplaceAllString(v, "-march=$${"+argCPU+"}${1}") // $$ is a literal $
		sep := " \\\n    "
		if i == 0 {
			sep = " "
		}
		r.w("%s%s=\"%s\"", sep, e.Name, v)
	}
	r.w("\n")
	// An empty OUT, as the contract promises (the Dagger executor makes it the same way).
	r.w("WORKDIR %s\nWORKDIR %s\n", plan.ContainerOut(s.Name), plan.ContainerWorkDir)
	r.w("RUN")
	return heredoc(&r.b, " ", plan.ContainerScript(s))
}

// source writes how stage s gets its source c: a profile kept in the repository is copied
// from the build context, a git source fetched and checked by tree, a tarball added by URL
// (the lock's or the mirror's) with its checksum.
func (r *renderer) source(c lock.Component, s plan.Stage) {
	if p, ok := r.l.ProfileBySource(c.Name); ok && p.InRepo() {
		// A file of the build context: COPY it and check it (ADD --checksum takes URLs only).
		dir := r.o.lockDir
		if dir == "" {
			dir = path.Dir(lock.DefaultPath)
		}
		r.w("COPY %s %s\n", path.Join(dir, p.URL), plan.ContainerSrc(s))
		r.w("RUN echo '%s  %s' | sha256sum -c -\n", c.SHA256, plan.ContainerSrc(s))
		return
	}
	if c.Git != nil {
		r.w("%s", gitSource(c, s, r.o.mirror))
		return
	}
	src := c.URL
	if r.o.mirror != "" {
		src = r.o.mirror + "/" + url.PathEscape(c.FileName())
	}
	r.w("ADD --checksum=sha256:%s %s %s\n", c.SHA256, src, plan.ContainerSrc(s))
}

// imageStages writes the image: the install tree over the runtime base. The runtime base
// has no shell, so the writable directories get their owner in a builder stage and the
// tree is copied in one step that keeps owners (COPY --from preserves uid/gid without
// --chown).
func (r *renderer) imageStages(final plan.Stage) {
	tree := plan.ContainerOut(final.Name)
	r.w("\nFROM builder AS rootfs\n")
	r.w("COPY --from=%s %s/ /rootfs/\n", final.Name, tree)
	r.w("RUN chown -R %s", plan.Runtime.User)
	for _, d := range plan.Runtime.WritableDirs {
		r.w(" /rootfs/%s", d)
	}
	r.w("\n")
	r.w("\nFROM ${%s}\n", argRuntimeImage)
	r.w("COPY --from=rootfs /rootfs/ /\n")
	r.w("USER %s\n", plan.Runtime.User)
	r.w("EXPOSE %s\n", strings.Join(plan.Runtime.Ports, " "))
	r.w("STOPSIGNAL %s\n", plan.Runtime.StopSignal)
	ep, _ := json.Marshal(plan.Runtime.Entrypoint)
	r.w("ENTRYPOINT %s\n", ep)
}

// Option changes how Render renders.
type Option func(*options)

// ErrMirrorURL is returned (wrapped) for a mirror Render cannot use.
var ErrMirrorURL = errors.New("not an http(s) URL like http://127.0.0.1:8000/sources")

type options struct {
	mirror  string
	lockDir string
}

// withLockDir says where the lock file lies relative to the build context (default
// pipeline/lock): a profile the lock keeps in the repository is copied from there.
func withLockDir(dir string) Option { return func(o *options) { o.lockDir = filepath.ToSlash(dir) } }

// withSourceMirror makes every ADD fetch baseURL/<file name> instead of the lock's upstream
// URL, as "ci build --mirror" fetches. ADD --checksum still pins each file's SHA-256, so a
// mirror needs no trust and may be plain http.
func withSourceMirror(baseURL string) Option {
	return func(o *options) { o.mirror = strings.TrimSuffix(baseURL, "/") }
}

// heredoc writes "<<'END'<after>\n<body>END\n" (a quoted delimiter: BuildKit expands
// nothing inside, the shell or the file gets the text as is).
func heredoc(b *strings.Builder, before, body string, after ...string) error {
	if !strings.HasSuffix(body, "\n") {
		return fmt.Errorf("heredoc text must end with a newline (a heredoc always adds one)")
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.TrimSpace(line) == heredocEnd {
			return fmt.Errorf("text contains the heredoc delimiter %s as a line", heredocEnd)
		}
	}
	fmt.Fprintf(b, "%s<<'%s'%s\n%s%s\n", before, heredocEnd, strings.Join(after, ""), body, heredocEnd)
	return nil
}

func envValues(p *plan.Plan) string {
	var all []string
	for _, s := range p.Stages {
		for _, e := range s.Env {
			all = append(all, e.Value)
		}
	}
	return strings.Join(all, "\n")
}

func cpuNames(arch string) string {
	var names []string
	for _, l := range plan.CPULevels {
		if l.Arch == arch {
			names = append(names, l.Name)
		}
	}
	return strings.Join(names, ", ")
}

// gitSource renders a git-pinned source (lock: git): BuildKit fetches the commit (or the
// mirror's archive of it), and the files are accepted only when they hash to the pinned tree,
// computed by git itself with every attribute conversion off; the stage's SRC is then an
// archive of them, as for a release tarball.
func gitSource(c lock.Component, s plan.Stage, mirror string) string {
	dir := plan.ContainerSrcDir + "/" + s.Name + "-tree"
	top := strings.TrimSuffix(c.FileName(), "-git.tar.gz")
	verify := `export GIT_DIR="$(mktemp -d)" GIT_WORK_TREE=.
git init -q
printf '* -text -filter -ident -export-ignore\n' > "$GIT_DIR/info/attributes"
git add -A -f .
tree=$(git write-tree)
rm -rf "$GIT_DIR"
if [ "$tree" != "` + c.Git.Tree + `" ]; then
  echo "` + c.Name + `: the files hash to git tree $tree, the lock pins ` + c.Git.Tree + ` (commit ` + c.Git.Commit + `): refusing them" >&2
  exit 1
fi
`
	var b strings.Builder
	if mirror != "" {
		fmt.Fprintf(&b, "ADD %s/%s %s\n", mirror, url.PathEscape(c.FileName()), plan.ContainerSrc(s))
		fmt.Fprintf(&b, "RUN <<'EOF'\nmkdir -p %s/%s && cd %s/%s\ntar -xzf %s --strip-components=1 --no-same-owner\n%scd / && rm -rf %s\nEOF\n",
			dir, top, dir, top, plan.ContainerSrc(s), verify, dir)
		return b.String()
	}
	fmt.Fprintf(&b, "ADD --keep-git-dir=false %s#%s %s/%s\n", c.Git.Repository, c.Git.Commit, dir, top)
	fmt.Fprintf(&b, "RUN <<'EOF'\ncd %s/%s\n%star -czf %s -C %s %s\ncd / && rm -rf %s\nEOF\n",
		dir, top, verify, plan.ContainerSrc(s), dir, top, dir)
	return b.String()
}
