package netfail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The failures are real ones, made on loopback (a DNS answer excepted: its error is built as
// the resolver builds it for NXDOMAIN, so that no query leaves this machine).
func TestClassify(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := closed.Addr().String()
	closed.Close()

	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // accepted, never answered
		}
	}()

	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hangup.Close() })
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1024)
			c.Read(buf) // the request, then no answer at all
			c.Close()
		}
	}()

	get := func(u string, timeout time.Duration) error {
		c := &http.Client{Timeout: timeout}
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s succeeded", u)
		}
		return fmt.Errorf("listing /repos/o/r/releases: %w", err)
	}
	nxdomain := &url.Error{Op: "Get", URL: "http://mirror.example.invalid/x.tar.gz", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "mirror.example.invalid", Server: "127.0.0.53:53", IsNotFound: true}}}
	servfail := &net.DNSError{Err: "server misbehaving", Name: "api.github.com", IsTemporary: true}

	for _, c := range []struct {
		name      string
		err       error
		kind      Kind
		host      string
		transient bool
		says      string
	}{
		{"NXDOMAIN", fmt.Errorf("source zlib: %w", nxdomain), DNS, "mirror.example.invalid", false, "mirror.example.invalid: DNS failure (no such host), not transient"},
		{"a resolver that failed", servfail, DNS, "api.github.com", true, "api.github.com: DNS failure (server misbehaving), transient"},
		{"nothing listens", get("http://"+refusedAddr+"/x", 5*time.Second), Refused, refusedAddr, true, refusedAddr + ": connection refused, transient"},
		{"an untrusted certificate", get(tlsSrv.URL+"/x", 5*time.Second), TLS, strings.TrimPrefix(tlsSrv.URL, "https://"), false, "TLS error (x509: certificate signed by unknown authority), not transient"},
		{"no answer", get("http://"+silent.Addr().String()+"/x", 200*time.Millisecond), Timeout, silent.Addr().String(), true, "timeout ("},
		{"the run's deadline", &url.Error{Op: "Get", URL: "https://nginx.org/en/download.html", Err: context.DeadlineExceeded}, Timeout, "nginx.org", true, "nginx.org: timeout (context deadline exceeded), transient"},
		{"closed before an answer", get("http://"+hangup.Addr().String()+"/x", 5*time.Second), Reset, hangup.Addr().String(), true, "connection cut off (EOF), transient"},
		{"HTTP 503", fmt.Errorf("x: %w", &HTTPStatusError{What: "GET x", Code: 503}), Status, "", true, "HTTP error (HTTP 503 Service Unavailable), transient"},
		{"HTTP 404", &HTTPStatusError{What: "GET x", Code: 404}, Status, "", false, "HTTP error (HTTP 404 Not Found), not transient"},
		{"not a network failure", errors.New("sha256 mismatch"), None, "", false, "error, not transient"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := Classify(c.err)
			if f.Kind != c.kind || f.Host != c.host || f.Transient != c.transient || !strings.Contains(f.String(), c.says) {
				t.Errorf("Classify(%v) = %+v (%s), want kind %s, host %q, transient %v, saying %q", c.err, f, f, c.kind, c.host, c.transient, c.says)
			}
			if Transient(c.err) != c.transient {
				t.Errorf("Transient(%v) = %v, want %v", c.err, !c.transient, c.transient)
			}
		})
	}
}

// The one rule for "will running again help?" (issue 29: a bad track, an unusable cache, a
// 401 and a missing HOME were all called transient; issue 40: a DNS failure was retried).
func TestTransient(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
	reset := &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	refused := &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
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
		{"a connection refused", refused, true},
		{"a body cut short", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), true},
		{"HTTP 429", &HTTPStatusError{What: "GET x", Code: 429}, true},
		{"HTTP 401", fmt.Errorf("listing: %w", &HTTPStatusError{What: "GET x", Code: 401}), false},
		{"HTTP 403", &HTTPStatusError{What: "GET x", Code: 403}, false},
		{"a cache that is a file", fmt.Errorf("creating cache directory: %w", &os.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENOTDIR}), false},
		{"no HOME", fmt.Errorf("finding the cache directory: %w", errors.New("neither $XDG_CACHE_HOME nor $HOME are defined")), false},
		{"all causes transient", errors.Join(timeout, &HTTPStatusError{What: "GET x", Code: 502}), true},
		{"one cause permanent", fmt.Errorf("GitHub: %w; fallback: %w", timeout, &HTTPStatusError{What: "GET x", Code: 401}), false},
		{"a type that knows", fmt.Errorf("x: %w", knows{}), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

type knows struct{}

func (knows) Error() string   { return "a redirect loop" }
func (knows) Retryable() bool { return false }
func (knows) Timeout() bool   { return true } // what a type says about itself wins

func TestCauses(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	err := fmt.Errorf("nginx: %w", fmt.Errorf("GitHub: %w; fallback: %w", a, errors.Join(b, fmt.Errorf("wrapped: %w", c))))
	got := Causes(err)
	if len(got) != 3 || got[0] != a || got[1] != b || got[2].Error() != "wrapped: c" {
		t.Errorf("Causes = %q, want a, b, wrapped: c", got)
	}
	if got := Causes(a); len(got) != 1 || got[0] != a {
		t.Errorf("Causes(a) = %q", got)
	}
}
