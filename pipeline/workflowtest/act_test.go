//go:build workflows

package workflowtest

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// actVersion is the nektos/act that .ci/install-deps installs.
const actVersion = "0.2.89"

// actionsEnv names the directory of the pinned actions, unpacked and with their missing
// bundles rebuilt by .ci/prepare-actions (OWNER+REPO@SHA/ each).
const actionsEnv = "NGINX_FORGE_ACTIONS"

// actRunTimeout bounds one act run (go build of ./ci and the jobs on two cores).
const actRunTimeout = 8 * time.Minute

func actBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("act")
	if err != nil {
		testenv.Missing(t, "nektos/act "+actVersion, "run .ci/install-deps as root (go install github.com/nektos/act@v"+actVersion+")")
	}
	// The build information, not act --version: any act command creates
	// $XDG_CONFIG_HOME/act (~/.config/act) on this machine.
	out, err := exec.Command("go", "version", "-m", p).Output()
	if err != nil || !regexp.MustCompile(`(?m)^\s+mod\s+github\.com/nektos/act\s+v`+regexp.QuoteMeta(actVersion)+`\s`).Match(out) {
		t.Fatalf("%s is not github.com/nektos/act v%s (%v): run .ci/install-deps\n%s", p, actVersion, err, out)
	}
	return p
}

func actionsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(actionsEnv)
	if dir == "" {
		dir = "/var/cache/nginx-forge/actions"
	}
	if _, err := os.Stat(dir); err != nil {
		testenv.Missing(t, "the prepared actions "+dir, "run `.ci/prepare-actions "+dir+"` (or set "+actionsEnv+")")
	}
	return dir
}

// usesRE finds the pinned actions a workflow uses.
var usesRE = regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)@([0-9a-f]{40})\b`)

// localRepositories gives act each action the workflow pins as its local copy; a pin with
// no copy fails the test, naming it.
func localRepositories(t *testing.T, workflow string) []string {
	t.Helper()
	dir := actionsDir(t)
	var args []string
	seen := map[string]bool{}
	for _, m := range usesRE.FindAllStringSubmatch(workflow, -1) {
		pin := m[1] + "/" + m[2] + "@" + m[3]
		if seen[pin] {
			continue
		}
		seen[pin] = true
		d := filepath.Join(dir, m[1]+"+"+m[2]+"@"+m[3])
		if _, err := os.Stat(filepath.Join(d, ".prepared")); err != nil {
			t.Fatalf("the action %s has no prepared copy in %s: add its archive %s+%s@%s.tar.gz to ../shared/actions and run .ci/prepare-actions", pin, dir, m[1], m[2], m[3])
		}
		args = append(args, "--local-repository", pin+"="+d)
	}
	return args
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// gitEnv keeps the user's and the system's git configuration out of the fixture's git and
// out of the workflow's: the "global" configuration is an empty file of the test's own,
// since create-pull-request writes to it (git config --global safe.directory). Never
// /dev/null: git replaces a configuration file it writes by renaming a new one over it.
var gitEnv = []string{"GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@example.invalid",
	"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@example.invalid"}

// globalGitConfig is the test binary's scratch global git configuration (see gitEnv).
var globalGitConfig = func() string {
	f, err := os.CreateTemp("", "workflowtest-gitconfig-")
	if err != nil {
		panic(err)
	}
	f.Close()
	return f.Name()
}()

func TestMain(m *testing.M) {
	gitEnv = append(gitEnv, "GIT_CONFIG_GLOBAL="+globalGitConfig)
	code := m.Run()
	os.Remove(globalGitConfig)
	if grypeTools.dir != "" {
		os.RemoveAll(grypeTools.dir)
	}
	os.Exit(code)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return run(t, dir, gitEnv, "git", args...)
}

// copyTracked copies the checkout's tracked files (as they are in the work tree) to dst.
func copyTracked(t *testing.T, src, dst string) {
	t.Helper()
	for _, f := range strings.Split(strings.TrimRight(git(t, src, "ls-files", "-z"), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(src, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// pullsAPI stands in for the part of GitHub's REST API that create-pull-request calls
// (/api/v3 on the remote's host, as for GitHub Enterprise): it records each call.
type pullsAPI struct {
	mu    sync.Mutex
	calls []apiCall
}

type apiCall struct {
	Method, Path string
	Body         map[string]any
}

func (a *pullsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	a.mu.Lock()
	a.calls = append(a.calls, apiCall{r.Method, strings.TrimPrefix(r.URL.Path, "/api/v3"), body})
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	p := strings.TrimPrefix(r.URL.Path, "/api/v3")
	switch {
	case r.Method == http.MethodPost && regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls$`).MatchString(p):
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"number":1,"html_url":"https://127.0.0.1/pull/1","node_id":"PR_1","draft":false,"head":{"sha":"0"}}`)
	case r.Method == http.MethodPost && regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/1/labels$`).MatchString(p):
		fmt.Fprint(w, `[{"name":"dependencies"}]`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"Not Found (stand-in)"}`)
	}
}

func (a *pullsAPI) Calls() []apiCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]apiCall(nil), a.calls...)
}

// remote is the loopback stand-in for github.com: a TLS server holding a bare repository
// (git's smart HTTP through git http-backend) and the pulls API beside it.
type remote struct {
	URL     string // https://127.0.0.1:PORT/nginx-forge/nginx-forge.git
	Bare    string
	CAFile  string
	API     *pullsAPI
	gitPath string
}

func newRemote(t *testing.T, dir string) *remote {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		testenv.Missing(t, "git", "apt-get install git")
	}
	root := filepath.Join(dir, "remotes")
	r := &remote{Bare: filepath.Join(root, "nginx-forge", "nginx-forge.git"), API: &pullsAPI{}, gitPath: gitPath}
	mux := http.NewServeMux()
	mux.Handle("/api/v3/", r.API)
	mux.Handle("/", &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: append([]string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, gitEnv...)})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/nginx-forge/nginx-forge.git"
	r.CAFile = filepath.Join(dir, "remote-ca.pem")
	if err := os.WriteFile(r.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// Branches lists the remote's branches.
func (r *remote) Branches(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(git(t, r.Bare, "for-each-ref", "--format=%(refname:short)", "refs/heads")), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// actRun is one act run of a workflow in a fixture repository.
type actRun struct {
	Err error
	Log string
	// LeftInTmp is what the run left in its TMPDIR (runActWith), a name a line with the
	// files under it: nothing, unless a job leaves files behind.
	LeftInTmp []string
}

// runAct runs event on the fixture's workflow file under act in host mode, offline, with
// the pinned actions from their local copies; vars are repository variables.
func runAct(t *testing.T, fixture, workflow, event string, vars map[string]string, env []string) actRun {
	t.Helper()
	return runActWith(t, actOptions{Fixture: fixture, Workflow: workflow, Event: event, Vars: vars, Env: env})
}

// actOptions is one act run: runAct's arguments, and what the build scenarios add.
type actOptions struct {
	Fixture, Workflow, Event string
	// WorkflowFile, when set, is the file act runs instead of the fixture's
	// .github/workflows/Workflow (the checkout the jobs see keeps the fixture's own).
	WorkflowFile string
	Vars         map[string]string // repository variables
	Secrets      map[string]string // secrets besides GITHUB_TOKEN
	Env          []string
	Args         []string      // more act arguments (--matrix, --eventpath)
	Timeout      time.Duration // actRunTimeout when zero
	// ToolCache adds tools to act's tool cache beside Go: name -> version -> file (a
	// binary, linked as tool_cache/NAME/VERSION/x64/NAME), as a runner image has them.
	ToolCache map[string]map[string]string
	// LeavesTmp: the scenario plants a job that leaves files in TMPDIR and checks
	// actRun.LeftInTmp itself (otherwise anything left there fails the test).
	LeavesTmp bool
}

// runActWith runs one act run (see runAct).
func runActWith(t *testing.T, o actOptions) actRun {
	t.Helper()
	fixture, workflow, event, vars, env := o.Fixture, o.Workflow, o.Event, o.Vars, o.Env
	timeout := o.Timeout
	if timeout == 0 {
		timeout = actRunTimeout
	}
	act := actBinary(t)
	workflowFile := filepath.Join(".github", "workflows", workflow) // relative to the fixture
	read := filepath.Join(fixture, workflowFile)
	if o.WorkflowFile != "" {
		workflowFile, read = o.WorkflowFile, o.WorkflowFile
	}
	text, err := os.ReadFile(read)
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	actCache := filepath.Join(scratch, "act")
	// setup-go finds the Go that runs this test in act's tool cache, as a runner image has
	// it (no download).
	goroot := strings.TrimSpace(run(t, "", nil, "go", "env", "GOROOT"))
	goVersion := strings.TrimPrefix(strings.TrimSpace(run(t, "", nil, "go", "env", "GOVERSION")), "go")
	tc := filepath.Join(actCache, "tool_cache", "go", goVersion)
	if err := os.MkdirAll(tc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(goroot, filepath.Join(tc, "x64")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tc, "x64.complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, versions := range o.ToolCache {
		for version, file := range versions {
			d := filepath.Join(actCache, "tool_cache", name, version)
			if err := os.MkdirAll(filepath.Join(d, "x64"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(file, filepath.Join(d, "x64", name)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "x64.complete"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	args := []string{event, "-W", workflowFile,
		"-P", "ubuntu-24.04=-self-hosted", "-P", "ubuntu-24.04-arm=-self-hosted",
		"--action-cache-path", actCache, "--action-offline-mode",
		"--artifact-server-path", filepath.Join(scratch, "artifacts"),
		"--artifact-server-addr", "127.0.0.1", "--artifact-server-port", freePort(t),
		"--no-cache-server",
		// A stand-in token (not a secret): create-pull-request sends it to the stand-ins.
		"-s", "GITHUB_TOKEN=stand-in-token"}
	for k, v := range vars {
		args = append(args, "--var", k+"="+v)
	}
	for k, v := range o.Secrets {
		args = append(args, "-s", k+"="+v)
	}
	args = append(args, o.Args...)
	args = append(args, localRepositories(t, string(text))...)
	gocache := strings.TrimSpace(run(t, "", nil, "go", "env", "GOCACHE"))
	gomodcache := strings.TrimSpace(run(t, "", nil, "go", "env", "GOMODCACHE"))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, act, args...)
	cmd.Dir = fixture
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), gitEnv...)
	cmd.Env = append(cmd.Env,
		// act creates its config directory under XDG_CONFIG_HOME: a scratch one, so the
		// machine is left as it was; Go keeps its caches (warm builds, no downloads).
		"XDG_CONFIG_HOME="+filepath.Join(scratch, "config"), "XDG_CACHE_HOME="+filepath.Join(scratch, "cache"),
		"GOCACHE="+gocache, "GOMODCACHE="+gomodcache, "GOPROXY=off", "GOTOOLCHAIN=local",
		"GOFLAGS=-buildvcs=false")
	// The run's TMPDIR is a directory of its own, so that whatever the jobs write there
	// leaves the machine's /tmp as it was (t.TempDir removes it), and whatever a job leaves
	// behind is seen: on GitHub a runner's temporary files go with the runner, a self-hosted
	// runner (this one) keeps them. Found: anchore/scan-action's report (grype-XXXXXX).
	tmp := filepath.Join(scratch, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("act %s %s: %v after %s", event, workflow, err, time.Since(start).Round(time.Second))
	if os.Getenv("WORKFLOWTEST_LOG") != "" { // the whole run, for a person reading it
		t.Log(out.String())
	}
	r := actRun{Err: err, Log: out.String(), LeftInTmp: leftIn(t, tmp)}
	if len(r.LeftInTmp) > 0 && !o.LeavesTmp {
		t.Errorf("the run left files in its TMPDIR (a self-hosted runner's /tmp would keep them; write them under RUNNER_TEMP, which the runner empties):\n%s", strings.Join(r.LeftInTmp, "\n"))
	}
	return r
}

// leftIn lists what is in dir: each entry, with the files under it.
func leftIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		var files []string
		_ = filepath.WalkDir(filepath.Join(dir, e.Name()), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				files = append(files, rel)
			}
			return nil
		})
		out = append(out, fmt.Sprintf("%s (%d files: %s)", e.Name(), len(files), strings.Join(files, ", ")))
	}
	return out
}
