package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// GitStallError is a git fetch that said nothing for the stall time: git 2.39 has no connect
// timeout of its own, so a server that accepts the connection and never answers (TLS
// included) would hold it for curl's 300 s, and its low-speed limit (GIT_HTTP_LOW_SPEED_*)
// starts only once a transfer has. The fetch runs with --progress: git and the server
// report every phase as it moves, so silence for the stall time is a server that stopped.
type GitStallError struct {
	Repository string        // the repository's URL, redacted
	After      time.Duration // the stall time
}

func (e *GitStallError) Error() string {
	return fmt.Sprintf("git fetch from %s said nothing for %s: the server accepted the connection and stopped answering (or never answered); git was stopped", e.Repository, e.After)
}

// Retryable: a server that went silent may be a network hiccup, as a download's stall is.
func (e *GitStallError) Retryable() bool { return true }

// Timeout makes it a timeout to netfail.Classify.
func (e *GitStallError) Timeout() bool { return true }

// git runs git in repo. fetch (watch true) runs with --progress under a watchdog that stops
// git and its helpers (git-remote-https holds the connection: the whole process group) when
// git writes nothing for the stall time; the run's context stops them on a signal.
func (f *Fetcher) git(ctx context.Context, repo, shown string, watch bool, args ...string) (string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		// Once a transfer started, a server that trickles less than 1 KiB a second for the
		// stall time also ends it: git's own floor, the one downloads have.
		"GIT_HTTP_LOW_SPEED_LIMIT=1024", "GIT_HTTP_LOW_SPEED_TIME="+strconv.Itoa(max(1, int(f.stall/time.Second))))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	stderr := &watchedWriter{}
	cmd.Stdout, cmd.Stderr = &out, stderr
	if watch {
		stall := &GitStallError{Repository: shown, After: f.stall}
		stderr.stall = f.stall
		stderr.timer = time.AfterFunc(f.stall, func() { cancel(stall) })
		defer stderr.timer.Stop()
	}
	if err := cmd.Run(); err != nil {
		if se := (*GitStallError)(nil); errors.As(context.Cause(ctx), &se) {
			return "", se
		}
		return "", &gitError{op: args[0], err: err, stderr: strings.TrimSpace(safeio.Redact(stderr.said()))}
	}
	return strings.TrimSpace(out.String()), nil
}

// watchedWriter is git's stderr: each write restarts the watchdog's timer. It keeps what git
// said for the error, without the progress lines, and at most maxGitStderr bytes of it.
type watchedWriter struct {
	mu    sync.Mutex
	timer *time.Timer // nil: not watched
	stall time.Duration
	buf   bytes.Buffer
}

const maxGitStderr = 64 << 10

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Reset(w.stall)
	}
	if room := maxGitStderr - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// gitProgressRE is a progress line of git or of the server ("remote: Counting objects: 3").
var gitProgressRE = regexp.MustCompile(`^(remote: )?[A-Z][a-z]+( [a-z]+)? objects: `)

func (w *watchedWriter) said() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var kept []string
	for _, line := range strings.FieldsFunc(w.buf.String(), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if !gitProgressRE.MatchString(line) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}
