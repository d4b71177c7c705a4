package host_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// These tests run real bash scripts through the executor with small plans of their own; the
// tests in stack_test.go build the real stack.

// tarball writes a .tar.gz holding dir/hello.txt and returns the archive pipeline/source
// prepares from it (what a stage reads) and the written file's sha256 (the plan's pin).
func tarball(t *testing.T, content string) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hello-1.0.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "hello-1.0/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "hello-1.0/hello.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))})
	tw.Write([]byte(content))
	tw.Close()
	gz.Close()
	f.Close()
	b, _ := os.ReadFile(p)
	sum := sha256.Sum256(b)
	prepared, err := source.PrepareFile(context.Background(), p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return prepared, hex.EncodeToString(sum[:])
}

// smallPlan has two stages: "lib" copies the tarball's file into OUT and records the contract
// variables; "app" reads lib's OUT through DEP_LIB and a shipped file from WORK.
func smallPlan(sha string) *plan.Plan {
	src := plan.Source{Component: "hello", Version: "1.0", FileName: "hello-1.0.tar.gz", SHA256: sha}
	return &plan.Plan{
		Platform:        plan.Platform{OS: "linux", Arch: hostArch()},
		CPU:             "x86-64",
		SourceDateEpoch: 1700000000,
		HostTools:       []plan.Tool{{Command: "tar", Package: "tar"}, {Command: "bash", Package: "bash"}},
		Final:           "app",
		Stages: []plan.Stage{
			{
				Name:   "lib",
				Source: src,
				Env:    []plan.EnvVar{{Name: "GREETING", Value: "hi"}},
				Script: `mkdir src && tar -xzf "$SRC" -C src --strip-components=1
cp src/hello.txt "$OUT/hello.txt"
{
  echo "pwd_is_work=$([ "$(pwd)" = "$WORK" ] && echo yes)"
  echo "greeting=$GREETING"
  echo "jobs=$JOBS"
  echo "epoch=$SOURCE_DATE_EPOCH"
  echo "tz=$TZ lang=$LANG"
  echo "leak=${NGINX_FORGE_HOST_TEST_LEAK:-unset}"
  echo "home_is_work=$([ "$HOME" = "$WORK" ] && echo yes)"
  echo "tmpdir_is_scratch=$([ "$TMPDIR" = "$(dirname "$WORK")/tmp" ] && [ -d "$TMPDIR" ] && echo yes)"
} > "$OUT/env.txt"
# What a compiler killed mid-file leaves: it goes with the scratch directory (checked below).
touch "$TMPDIR/cc-left-behind.s"
echo "lib built"
`,
			},
			{
				Name:   "app",
				Source: src,
				Deps:   []string{"lib"},
				Files:  []plan.File{{Path: "files/app.conf", Mode: 0o644, Data: []byte("conf v1\n")}},
				Script: `cat "$DEP_LIB/hello.txt" "$WORK/files/app.conf" > "$OUT/app.txt"
echo "app built"
`,
			},
		},
	}
}

func sources(path string) map[string]string { return map[string]string{"hello": path} }

type logs struct {
	mu    sync.Mutex
	lines []string
}

// Send keeps the text of each note the executor sends (WithProgress).
func (l *logs) Send(e progress.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := e.(progress.Note); ok {
		l.lines = append(l.lines, strings.TrimSpace(n.Text))
	}
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestRunContractAndCache(t *testing.T) {
	t.Setenv("NGINX_FORGE_HOST_TEST_LEAK", "leaked")
	src, sha := tarball(t, "hello world\n")
	cache := filepath.Join(t.TempDir(), "cache")
	var lg logs
	ex := host.New(host.WithCacheDir(cache), host.WithJobs(3), host.WithProgress(&lg))
	ctx := context.Background()

	res, err := ex.Run(ctx, smallPlan(sha), sources(src))
	if err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile(filepath.Join(res.Tree, "app.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(app) != "hello world\nconf v1\n" {
		t.Errorf("app.txt = %q", app)
	}
	lib, _ := res.Stage("lib")
	env, _ := os.ReadFile(filepath.Join(lib.Out, "env.txt"))
	for _, want := range []string{"pwd_is_work=yes", "greeting=hi", "jobs=3", "epoch=1700000000", "tz=UTC lang=C", "leak=unset", "home_is_work=yes", "tmpdir_is_scratch=yes"} {
		if !strings.Contains(string(env), want+"\n") {
			t.Errorf("stage environment lacks %q:\n%s", want, env)
		}
	}
	if b, _ := os.ReadFile(lib.Log); !strings.Contains(string(b), "lib built") {
		t.Errorf("stage log %s does not hold the script's output: %q", lib.Log, b)
	}
	for _, s := range res.Stages {
		if s.Cached {
			t.Errorf("stage %s cached on a cold cache", s.Name)
		}
	}
	if !strings.Contains(lg.String(), "stage lib: built in") {
		t.Errorf("progress lines:\n%s", lg.String())
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "tmp")); len(entries) != 0 {
		t.Errorf("scratch directories left behind: %v", entries)
	}

	// Nothing changed: every stage comes from the cache.
	res2, err := ex.Run(ctx, smallPlan(sha), sources(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res2.Stages {
		if !s.Cached {
			t.Errorf("second run rebuilt stage %s", s.Name)
		}
	}
	if res2.Tree != res.Tree {
		t.Errorf("second run tree %s, first %s", res2.Tree, res.Tree)
	}
	if !strings.Contains(lg.String(), "stage lib: cached (key ") {
		t.Errorf("progress lines:\n%s", lg.String())
	}

	// Jobs is not part of the key.
	res3, err := host.New(host.WithCacheDir(cache), host.WithJobs(1)).Run(ctx, smallPlan(sha), sources(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res3.Stages {
		if !s.Cached {
			t.Errorf("a different -j rebuilt stage %s", s.Name)
		}
	}

	// A change to the last stage only (its shipped file) rebuilds only that stage.
	p := smallPlan(sha)
	p.Stages[1].Files[0].Data = []byte("conf v2\n")
	res4, err := ex.Run(ctx, p, sources(src))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := res4.Stage("lib"); !l.Cached {
		t.Error("changing app's file rebuilt lib")
	}
	if a, _ := res4.Stage("app"); a.Cached {
		t.Error("changing app's file did not rebuild app")
	}
	if b, _ := os.ReadFile(filepath.Join(res4.Tree, "app.txt")); string(b) != "hello world\nconf v2\n" {
		t.Errorf("app.txt after the change = %q", b)
	}

	// A change to the first stage's environment rebuilds both (app depends on lib's key).
	p = smallPlan(sha)
	p.Stages[0].Env[0].Value = "hello"
	res5, err := ex.Run(ctx, p, sources(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res5.Stages {
		if s.Cached {
			t.Errorf("changing lib's env left stage %s cached", s.Name)
		}
	}
}

func TestFailedStageShowsLogTail(t *testing.T) {
	src, sha := tarball(t, "x\n")
	cache := filepath.Join(t.TempDir(), "cache")
	p := smallPlan(sha)
	p.Stages[1].Script = "echo compiling widget.c\necho 'widget.c:3: error: expected ;' >&2\nexit 7\n"
	res, err := host.New(host.WithCacheDir(cache)).Run(context.Background(), p, sources(src))
	if err == nil {
		t.Fatal("a failing script did not fail the run")
	}
	for _, want := range []string{"stage app failed", "exit status 7", "widget.c:3: error: expected ;", "failed-app-"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if l, _ := res.Stage("lib"); l.Cached || l.Out == "" {
		t.Errorf("lib result %+v", l)
	}
	// The failed stage is not cached: running again runs it again.
	_, err = host.New(host.WithCacheDir(cache)).Run(context.Background(), p, sources(src))
	if err == nil || !strings.Contains(err.Error(), "stage app failed") {
		t.Errorf("second run: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "stages")); len(entries) != 1 {
		t.Errorf("cache holds %d entries, want only lib's", len(entries))
	}
}

func TestTamperedSourceFailsBeforeAnything(t *testing.T) {
	src, sha := tarball(t, "original\n")
	b, _ := os.ReadFile(src)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	_, err := host.New(host.WithCacheDir(cache)).Run(context.Background(), smallPlan(sha), sources(src))
	if err == nil {
		t.Fatal("a tampered tarball was built")
	}
	sum := sha256.Sum256(b)
	written := strings.TrimSuffix(filepath.Base(src), ".tar.gz")
	for _, want := range []string{src, "written with sha256 " + written, hex.EncodeToString(sum[:]), "tampered"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("the cache directory was created before the check: %v", err)
	}

	_, err = host.New(host.WithCacheDir(cache)).Run(context.Background(), smallPlan(sha), map[string]string{})
	if err == nil || !strings.Contains(err.Error(), "no source tarball given for hello") {
		t.Errorf("missing source: %v", err)
	}
}

func TestMissingToolsListedTogether(t *testing.T) {
	src, sha := tarball(t, "x\n")
	p := smallPlan(sha)
	p.HostTools = append(p.HostTools,
		plan.Tool{Command: "nginx-forge-no-such-compiler", Package: "forge-cc"},
		plan.Tool{Command: "nginx-forge-no-such-linker", Package: "forge-ld"})
	p.HostLibraries = []plan.Tool{{Command: "libnginx-forge-absent.a", Package: "libforge-dev"}}
	cache := filepath.Join(t.TempDir(), "cache")
	_, err := host.New(host.WithCacheDir(cache)).Run(context.Background(), p, sources(src))
	if err == nil {
		t.Fatal("missing tools did not fail the run")
	}
	for _, want := range []string{"nginx-forge-no-such-compiler (package forge-cc)", "nginx-forge-no-such-linker (package forge-ld)",
		"libnginx-forge-absent.a (package libforge-dev)", "apt-get install forge-cc forge-ld libforge-dev"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("the cache directory was created before the check: %v", err)
	}
}

// TestConcurrentRunsBuildOnce: two executors sharing a cache dir (as test packages running in
// parallel do) build each stage once; the second waits on the lock and reuses the output.
func TestConcurrentRunsBuildOnce(t *testing.T) {
	src, sha := tarball(t, "x\n")
	cache := filepath.Join(t.TempDir(), "cache")
	p := smallPlan(sha)
	p.Stages[0].Script = "sleep 1\n" + p.Stages[0].Script
	var wg sync.WaitGroup
	results := make([]*host.Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = host.New(host.WithCacheDir(cache)).Run(context.Background(), p, sources(src))
		}()
	}
	wg.Wait()
	built := 0
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if l, _ := results[i].Stage("lib"); !l.Cached {
			built++
		}
	}
	if built != 1 {
		t.Errorf("stage lib was built %d times by two concurrent runs, want 1", built)
	}
}

func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "usr/sbin"), 0o755)
	os.WriteFile(filepath.Join(src, "usr/sbin/tool"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("tool", filepath.Join(src, "usr/sbin/alias"))
	os.Mkdir(filepath.Join(src, "empty"), 0o700)
	dst := filepath.Join(t.TempDir(), "out")
	if err := host.CopyTree(dst, src); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "usr/sbin/tool")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("tool: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "usr/sbin/alias")); err != nil || l != "tool" {
		t.Errorf("alias -> %q %v", l, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "empty")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("empty dir: %v %v", fi, err)
	}
	if err := host.CopyTree(dst, src); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("copying into a non-empty directory: %v", err)
	}
}

// Each failure keeps its log under a name of its own, and the cache keeps only the newest
// KeepFailedLogs of them (issue 23: they stayed forever).
func TestFailedLogsKeepTheNewest(t *testing.T) {
	src, sha := tarball(t, "x\n")
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for i := 0; i < host.KeepFailedLogs+3; i++ {
		f := filepath.Join(cache, fmt.Sprintf("failed-old%d.log", i))
		if err := os.WriteFile(f, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(f, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
	}
	p := smallPlan(sha)
	p.Stages[1].Script = "echo 'widget.c:3: error' >&2\nexit 7\n"
	var kept []string
	for i := 0; i < 2; i++ {
		_, err := host.New(host.WithCacheDir(cache)).Run(context.Background(), p, sources(src))
		if err == nil {
			t.Fatal("a failing script did not fail the run")
		}
		m := regexp.MustCompile(`log: (\S+failed-app-\S+\.log)\)`).FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("the error names no failed-app-*.log: %v", err)
		}
		kept = append(kept, m[1])
		time.Sleep(10 * time.Millisecond)
	}
	logs, _ := filepath.Glob(filepath.Join(cache, "failed-*.log"))
	if len(logs) != host.KeepFailedLogs {
		t.Errorf("%d failed logs in the cache, want the newest %d: %q", len(logs), host.KeepFailedLogs, logs)
	}
	for _, k := range kept {
		if b, err := os.ReadFile(k); err != nil || !strings.Contains(string(b), "widget.c:3: error") {
			t.Errorf("the log %s of a recent failure: %v", k, err)
		}
	}
	if kept[0] == kept[1] {
		t.Errorf("two failures shared one log name %s", kept[0])
	}
	for i := 0; i < 3+2; i++ { // the oldest go first
		if _, err := os.Stat(filepath.Join(cache, fmt.Sprintf("failed-old%d.log", i))); err == nil {
			t.Errorf("failed-old%d.log, one of the oldest, is still there", i)
		}
	}
}

// TestLibcryptVersionIsOneVersion: on a machine with libcrypt-dev installed for two
// architectures (.ci/install-deps adds arm64's for cross builds), the version the SBOM records
// is the build's own architecture's, one Debian version.
func TestLibcryptVersionIsOneVersion(t *testing.T) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Skip("no dpkg-query: not a Debian-family machine")
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", plan.LibcryptPackage).Output(); err != nil {
		t.Skipf("libcrypt-dev is not installed here (.ci/install-deps installs it): %v", err)
	} else {
		t.Logf("dpkg-query about the bare package name: %q", out)
	}
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	v, err := host.NewEngine().PackageVersion(context.Background(), p, plan.LibcryptPackage)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.CheckDebVersion(plan.LibcryptPackage, v); err != nil {
		t.Error(err)
	}
}
