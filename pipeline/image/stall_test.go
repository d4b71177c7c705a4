package image

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// quietServer answers every request with handle, on loopback. A handler goes quiet with
// <-quit, which ends with the test: the server does not notice a client that gives up while
// the request body is unread, so the request's context alone would keep it waiting.
func quietServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, quit <-chan struct{})) string {
	t.Helper()
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, quit) }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(quit) }) // before srv.Close, which waits for the handlers
	return strings.TrimPrefix(srv.URL, "http://")
}

// stallClient is a plain HTTP client over the registry transport.
func stallClient(idle time.Duration) *http.Client {
	return &http.Client{Transport: &stallTransport{base: http.DefaultTransport, idle: idle}}
}

// wantStall checks that err is the stall of host, found about when the timer ran out.
func wantStall(t *testing.T, what string, err error, host string, took time.Duration) {
	t.Helper()
	var stall *StallError
	if !errors.As(err, &stall) || stall.Host != host {
		t.Fatalf("%s: got %v, want a StallError for %s", what, err, host)
	}
	if !strings.Contains(err.Error(), "--registry-timeout") {
		t.Errorf("%s: %q does not name --registry-timeout", what, err)
	}
	if took > 5*time.Second {
		t.Errorf("%s: failed after %s with a stall timeout of a second or less", what, took)
	}
}

// Issue 29: a registry that accepts and then goes quiet held `ci build` forever (the base
// image pull in the preflight, the push at the end). Each way of going quiet now fails
// after the stall timeout: no answer, a body cut off, an upload the registry stops reading.
func TestStallTransportFailsAQuietRegistry(t *testing.T) {
	const idle = 300 * time.Millisecond
	noAnswer := quietServer(t, func(w http.ResponseWriter, r *http.Request, quit <-chan struct{}) { <-quit })
	cutOff := quietServer(t, func(w http.ResponseWriter, r *http.Request, quit <-chan struct{}) {
		w.Header().Set("Content-Length", "1000")
		w.Write(bytes.Repeat([]byte("x"), 100))
		w.(http.Flusher).Flush()
		<-quit
	})
	unread := quietServer(t, func(w http.ResponseWriter, r *http.Request, quit <-chan struct{}) { <-quit })

	start := time.Now()
	_, err := PullBase(context.Background(), noAnswer+"/debian@sha256:"+strings.Repeat("a", 64), v1.Platform{OS: "linux", Architecture: "amd64"}, quick(WithStallTimeout(idle))...)
	wantStall(t, "base pull from a registry that never answers", err, noAnswer, time.Since(start))

	start = time.Now()
	resp, err := stallClient(idle).Get("http://" + cutOff + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	wantStall(t, "a body cut off", err, cutOff, time.Since(start))

	start = time.Now()
	_, err = stallClient(idle).Post("http://"+unread+"/v2/x/blobs/uploads/", "application/octet-stream", bytes.NewReader(make([]byte, 64<<20)))
	wantStall(t, "an upload the registry stops reading", err, unread, time.Since(start))
}

// The stall timeout is not a deadline: a transfer that keeps moving, however slowly, runs
// for as long as it takes; one that only trickles fails.
func TestStallTransportLetsASlowTransferFinish(t *testing.T) {
	const idle = time.Second // 1 KiB takes 200 ms below: room for a loaded machine
	slow := func(chunk int, every time.Duration, n int) string {
		return quietServer(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
			for i := 0; i < n; i++ {
				if _, err := w.Write(bytes.Repeat([]byte("x"), chunk)); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(every)
			}
		})
	}
	get := func(host string) ([]byte, error) {
		resp, err := stallClient(idle).Get("http://" + host + "/v2/")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	// 3 s in all (three stall timeouts), 5 KiB/s.
	if b, err := get(slow(512, 100*time.Millisecond, 30)); err != nil || len(b) != 30*512 {
		t.Fatalf("a slow body: %d bytes, %v", len(b), err)
	}
	// A byte every 50 ms keeps a connection busy and moves nothing worth waiting for.
	trickle := slow(1, 50*time.Millisecond, 200)
	start := time.Now()
	_, err := get(trickle)
	wantStall(t, "a trickle", err, trickle, time.Since(start))
}

// A push whose uploads the registry stops reading fails at the push step with nothing
// tagged, after the stall timeout.
func TestPublishToAStalledRegistryMovesNoTag(t *testing.T) {
	reg := registry.New(registry.Logger(nopLogger()))
	host := quietServer(t, func(w http.ResponseWriter, r *http.Request, quit <-chan struct{}) {
		if strings.Contains(r.URL.Path, "/blobs/uploads/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut) {
			<-quit
			return
		}
		reg.ServeHTTP(w, r)
	})
	repo := host + "/nginx-forge"
	start := time.Now()
	_, err := Publish(context.Background(), variant(t, "a", "amd64"), repo, []string{"1.26.3"}, quick(WithStallTimeout(300*time.Millisecond))...)
	var perr *PublishError
	if !errors.As(err, &perr) || perr.Step != StepPush || perr.Pushed {
		t.Fatalf("got %v, want a push-step PublishError, nothing pushed", err)
	}
	wantStall(t, "push", err, host, time.Since(start))
	if got := headDigest(t, repo+":1.26.3"); !strings.HasPrefix(got, "absent") {
		t.Errorf("the tag points at %s after a stalled push", got)
	}
}
