//go:build integration

package main

import (
	"bufio"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// startBuild starts the built ci program on a host build into a fresh cache and returns it
// with a channel of its standard error lines.
func startBuild(t *testing.T, mirror, cache string, extra ...string) (*exec.Cmd, <-chan string, *strings.Builder) {
	t.Helper()
	args := append([]string{"build", "--engine", "host", "--no-smoke", "--lock", testLockPath, "--mirror", mirror, "--cache", cache}, extra...)
	cmd := exec.Command(ciBinary(t), args...)
	cmd.Dir = testenv.RepoRoot()
	// The source cache follows XDG_CACHE_HOME when --cache does not place it.
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 1000)
	var all strings.Builder
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			all.WriteString(sc.Text() + "\n")
			mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	return cmd, lines, &all
}

// leftovers are what an interrupted build must not leave: scratch and temporary download
// directories' entries in the cache, and processes working inside it.
func leftovers(t *testing.T, cache string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == "tmp" {
			entries, _ := os.ReadDir(p)
			for _, e := range entries {
				found = append(found, filepath.Join(p, e.Name()))
			}
			return filepath.SkipDir
		}
		return nil
	})
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, cache+"/") {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			found = append(found, "process "+filepath.Base(filepath.Dir(p))+" in "+cwd+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// SIGINT during a compile stage: the compilers are killed, the scratch directory removed, and
// ci exits 130. SIGTERM during a download: the partial file removed, exit 143. (Issue 23: an
// interrupted build exited 1.)
func TestSignalsExitAfterCleaningUp(t *testing.T) {
	mirrorDir := testenv.MirrorDir(t)
	for _, tool := range []string{"cc", "make", "perl"} {
		testenv.Tool(t, tool, "build-essential perl")
	}
	ciBinary(t)

	t.Run("SIGINT during a stage", func(t *testing.T) {
		srv := httptest.NewServer(http.FileServer(http.Dir(mirrorDir)))
		defer srv.Close()
		cache, tree := t.TempDir(), filepath.Join(t.TempDir(), "tree")
		cmd, lines, all := startBuild(t, srv.URL, cache, "--tree", tree)
		started := false
		for l := range lines {
			if strings.HasPrefix(l, "zlib (linux/amd64): started") {
				started = true
				break
			}
		}
		if !started {
			cmd.Wait()
			t.Fatalf("the build ended before its zlib stage started:\n%s", all.String())
		}
		time.Sleep(time.Second) // the stage's compilers are running
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code, took := waitExit(t, cmd, 30*time.Second)
		t.Logf("exit %d, %s after SIGINT\n%s", code, took.Round(time.Millisecond), all.String())
		if code != 130 {
			t.Errorf("exit %d after SIGINT, want 130", code)
		}
		if !strings.Contains(all.String(), "SIGINT: stopping and cleaning up") {
			t.Errorf("the program did not say it was interrupted:\n%s", all.String())
		}
		if left := leftovers(t, cache); len(left) > 0 {
			t.Errorf("left behind:\n%s", strings.Join(left, "\n"))
		}
		if entries, _ := os.ReadDir(tree); len(entries) > 0 {
			t.Errorf("the install tree %s was written by an interrupted build", tree)
		}
	})

	t.Run("SIGTERM during a download", func(t *testing.T) {
		files := http.FileServer(http.Dir(mirrorDir))
		hit := make(chan struct{}, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.URL.Path, "/openssl-") || strings.HasSuffix(r.URL.Path, ".asc") {
				files.ServeHTTP(w, r)
				return
			}
			// Half the tarball, then nothing until the client goes away.
			f, err := os.Open(filepath.Join(mirrorDir, filepath.Base(r.URL.Path)))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			defer f.Close()
			fi, _ := f.Stat()
			w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
			io.CopyN(w, f, fi.Size()/2)
			w.(http.Flusher).Flush()
			select {
			case hit <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		}))
		defer srv.Close()
		cache := t.TempDir()
		cmd, _, all := startBuild(t, srv.URL, cache, "--tree", filepath.Join(t.TempDir(), "tree"))
		select {
		case <-hit:
		case <-time.After(60 * time.Second):
			t.Fatalf("the build never asked for the OpenSSL tarball:\n%s", all.String())
		}
		time.Sleep(200 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code, took := waitExit(t, cmd, 30*time.Second)
		t.Logf("exit %d, %s after SIGTERM\n%s", code, took.Round(time.Millisecond), all.String())
		if code != 143 {
			t.Errorf("exit %d after SIGTERM, want 143", code)
		}
		if left := leftovers(t, cache); len(left) > 0 {
			t.Errorf("left behind:\n%s", strings.Join(left, "\n"))
		}
	})
}
