package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// The one rule for "will running again help?" (issue 29: a bad track, an unusable cache, a
// 401 and a missing HOME were all called transient).
func TestRetryable(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
	reset := &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"the run's deadline", fmt.Errorf("listing: %w", context.DeadlineExceeded), true},
		{"interrupted", fmt.Errorf("listing: %w", context.Canceled), false},
		{"a network timeout", timeout, true},
		{"a connection reset", reset, true},
		{"a body cut short", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), true},
		{"a stalled body", fmt.Errorf("GET x: %w", &stallError{After: "1m"}), true},
		{"HTTP 503", &HTTPStatusError{What: "GET x", Code: 503}, true},
		{"HTTP 429", &HTTPStatusError{What: "GET x", Code: 429}, true},
		{"HTTP 401", fmt.Errorf("listing: %w", &HTTPStatusError{What: "GET x", Code: 401}), false},
		{"HTTP 403", &HTTPStatusError{What: "GET x", Code: 403}, false},
		{"HTTP 404", &HTTPStatusError{What: "GET x", Code: 404}, false},
		{"a cache that is a file", fmt.Errorf("creating cache directory: %w", &os.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENOTDIR}), false},
		{"no HOME", fmt.Errorf("finding the cache directory: %w", errors.New("neither $XDG_CACHE_HOME nor $HOME are defined")), false},
		{"a size limit", &SizeError{URL: "x", Limit: 1, Size: -1}, false},
		{"a checksum", &ChecksumError{File: "f", URL: "x", Want: "a", Got: "b"}, false},
		{"marked permanent", permanent(&HTTPStatusError{What: "GET x", Code: 503}), false},
		{"all causes transient", errors.Join(timeout, &HTTPStatusError{What: "GET x", Code: 502}), true},
		{"one cause permanent", fmt.Errorf("GitHub: %w; fallback: %w", timeout, &HTTPStatusError{What: "GET x", Code: 401}), false},
		{"git: timed out", &gitError{op: "fetch", err: errors.New("exit status 128"), stderr: "fatal: unable to access 'https://x/': Failed to connect to x port 443: Connection timed out"}, true},
		{"git: no such commit", &gitError{op: "fetch", err: errors.New("exit status 128"), stderr: "fatal: remote error: upload-pack: not our ref 0123"}, false},
	} {
		if got := Retryable(c.err); got != c.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
