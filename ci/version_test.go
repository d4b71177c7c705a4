package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// parseVersion reads `ci --version` as a script would: the first line "nginx-forge
// VERSION", then "key: value" lines.
func parseVersion(t *testing.T, out string) (string, map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	version, ok := strings.CutPrefix(lines[0], "nginx-forge ")
	if !ok || version == "" {
		t.Fatalf("first line %q is not \"nginx-forge VERSION\"\n%s", lines[0], out)
	}
	kv := map[string]string{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("line %q is not \"key: value\"\n%s", l, out)
		}
		kv[k] = v
	}
	for _, k := range []string{"commit", "go", "lock", "images"} {
		if kv[k] == "" {
			t.Errorf("no %q line in\n%s", k, out)
		}
	}
	return version, kv
}

// checkLockLine: the lock line names every component of the built-in lock with its version.
func checkLockLine(t *testing.T, line string) {
	t.Helper()
	want := lock.Default()
	got := strings.Split(line, ", ")
	if len(got) != len(want.Components) {
		t.Fatalf("lock line %q has %d components, the built-in lock %d", line, len(got), len(want.Components))
	}
	for i, c := range want.Components {
		if got[i] != c.Name+" "+c.Version {
			t.Errorf("lock line entry %d = %q, want %q", i, got[i], c.Name+" "+c.Version)
		}
	}
}

func TestVersionFromBuildInfo(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/nginx-forge/nginx-forge", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-04T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	var out bytes.Buffer
	printVersion(&out, bi, true, lock.Default())
	version, kv := parseVersion(t, out.String())
	if version != "v1.2.3" {
		t.Errorf("version %q, want v1.2.3", version)
	}
	if !strings.HasPrefix(kv["commit"], rev+" (2026-12-04T10:00:00Z") || !strings.Contains(kv["commit"], "uncommitted") {
		t.Errorf("commit line %q: want the revision, its time and that the tree was modified", kv["commit"])
	}
	if !strings.HasPrefix(kv["go"], "go1.99.1 ") {
		t.Errorf("go line %q: want the Go version the binary was built with", kv["go"])
	}
	checkLockLine(t, kv["lock"])

	out.Reset()
	printVersion(&out, nil, false, lock.Default())
	version, kv = parseVersion(t, out.String())
	if !strings.HasPrefix(version, "unknown") || !strings.HasPrefix(kv["commit"], "unknown") {
		t.Errorf("without build information: version %q, commit %q; want both unknown", version, kv["commit"])
	}
}

var ciBin struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// ciBinary is ./ci built once per test run, with the VCS stamp Go adds when the checkout
// allows it (GOFLAGS may turn it off on a machine; -buildvcs=auto turns it back on).
func ciBinary(t *testing.T) string {
	t.Helper()
	goTool := testenv.Tool(t, "go", "golang")
	ciBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "nginx-forge-ci-bin-")
		if err != nil {
			ciBin.err = err
			return
		}
		ciBin.path = filepath.Join(dir, "ci")
		cmd := exec.Command(goTool, "build", "-buildvcs=auto", "-o", ciBin.path, "./ci")
		cmd.Dir = testenv.RepoRoot()
		ciBin.out, ciBin.err = cmd.CombinedOutput()
	})
	if ciBin.err != nil {
		t.Fatalf("go build ./ci: %v\n%s", ciBin.err, ciBin.out)
	}
	return ciBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ciBin.path != "" {
		os.RemoveAll(filepath.Dir(ciBin.path))
	}
	os.Exit(code)
}

// The built program's --version: the built-in lock's versions and, when Go could stamp it,
// the commit the checkout is at.
func TestVersionOfBuiltBinary(t *testing.T) {
	bin := ciBinary(t)
	for _, arg := range []string{"--version", "-version", "version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("ci %s: %v", arg, err)
		}
		version, kv := parseVersion(t, string(out))
		// A checkout's build is "(devel)", or, when Go stamps VCS information (Go 1.24+), a
		// pseudo-version of the commit (or the tag) it is at.
		if version != "(devel)" && !strings.HasPrefix(version, "v") {
			t.Errorf("ci %s: version %q, want (devel) or a module version for a build from a checkout", arg, version)
		}
		checkLockLine(t, kv["lock"])
		root := testenv.RepoRoot()
		// cmd/go stamps the commit only when the module root holds a .git directory: a git
		// worktree (.git is a file) gets none.
		if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
			if !strings.HasPrefix(kv["commit"], "unknown") {
				t.Errorf("ci %s: commit %q without a .git directory to stamp it from", arg, kv["commit"])
			}
			t.Logf("%s has no .git directory (a git worktree?): Go stamps no commit, so only its absence is checked", root)
			continue
		}
		head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatalf("git rev-parse HEAD: %v", err)
		}
		if !strings.HasPrefix(kv["commit"], strings.TrimSpace(string(head))+" ") {
			t.Errorf("ci %s: commit line %q, want HEAD %s", arg, kv["commit"], head)
		}
		if version != "(devel)" && !strings.Contains(version, string(head[:12])) && !strings.Contains(kv["commit"], "uncommitted") {
			t.Logf("ci %s: version %q names a tag rather than the commit's pseudo-version", arg, version)
		}
	}
}

// `ci help CMD` is `ci CMD --help`; `ci help` lists the commands; an unknown one is a usage
// error naming it.
func TestHelpCommand(t *testing.T) {
	ctx := context.Background()
	for name := range commands {
		var a, b, errA, errB bytes.Buffer
		if code := run(ctx, []string{"help", name}, &a, &errA); code != 0 {
			t.Errorf("help %s: exit %d: %s", name, code, errA.String())
		}
		run(ctx, []string{name, "--help"}, &b, &errB)
		if a.String() != b.String() || !strings.HasPrefix(a.String(), "Usage: go run ./ci "+name) {
			t.Errorf("help %s printed\n%s\nwant what %s --help prints:\n%s", name, a.String(), name, b.String())
		}
	}
	for _, args := range [][]string{{"help"}, {}, {"--help"}, {"-h"}} {
		var out, errOut bytes.Buffer
		if code := run(ctx, args, &out, &errOut); code != 0 || !strings.Contains(out.String(), "  build ") {
			t.Errorf("%q: exit %d, stdout %q: want the command list", args, code, out.String())
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "biuld"}, `unknown command "biuld"`},
		{[]string{"help", "build", "smoke"}, "one command at a time"},
		{[]string{"--lock", "x", "build"}, "--lock before a command"},
	} {
		var out, errOut bytes.Buffer
		if code := run(ctx, c.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut.String(), c.want)
		}
	}
}
