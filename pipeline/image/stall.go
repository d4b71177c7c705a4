package image

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// DefaultStallTimeout is how long a registry request may move less than stallProgress
// bytes (sent and received) before it fails (WithStallTimeout). A push or pull has no total
// deadline, as a large layer on a slow link may take any time; a registry that accepts a
// connection and then goes quiet (no answer, a body cut off mid-way, an upload it stops
// reading) or trickles (a byte now and then, which would keep a plain idle timer alive)
// fails after this long instead of holding the build forever.
const DefaultStallTimeout = 2 * time.Minute

// stallProgress is the least a request must move in each stall timeout: far below any real
// link, far above a trickle.
const stallProgress = 1 << 10

// WithStallTimeout replaces DefaultStallTimeout for every request of a pull, push, index or
// signature; d <= 0 keeps the default.
func WithStallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.stall = d
		}
	}
}

// StallError is a registry request that sent and received nothing for After. It is
// transient (running again may help: its Retryable method says so to netfail.Transient, the
// one rule), but go-containerregistry does not retry it within the run: a registry that went
// quiet once is not waited for again.
type StallError struct {
	Host  string
	After time.Duration
}

// Retryable is true: netfail.Transient honours it (a stall is worth another run).
func (e *StallError) Retryable() bool { return true }

func (e *StallError) Error() string {
	return fmt.Sprintf("the registry %s sent and accepted less than 1 KiB in %s: it went quiet or trickles (it may be down or overloaded; run again, or give a longer --registry-timeout)", e.Host, e.After)
}

// stallTransport is the registry transport under go-containerregistry's own (auth, retries):
// each request runs under a timer that every stallProgress bytes sent or received reset, and
// that cancels the request when it runs out.
type stallTransport struct {
	base http.RoundTripper
	idle time.Duration
}

func stallOption(idle time.Duration) remote.Option {
	return remote.WithTransport(&stallTransport{base: remote.DefaultTransport, idle: idle})
}

func (t *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &stallWatch{idle: t.idle, cancel: cancel, stalled: &StallError{Host: req.URL.Host, After: t.idle}, ctx: ctx}
	w.timer = time.AfterFunc(t.idle, func() { cancel(w.stalled) })
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &watchedBody{rc: req.Body, w: w}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		w.stop()
		return nil, w.cause(err)
	}
	w.moved.Store(0)
	w.timer.Reset(t.idle)
	resp.Body = &watchedBody{rc: resp.Body, w: w, closes: true}
	return resp, nil
}

// stallWatch is one request's timer and the cancellation it fires.
type stallWatch struct {
	moved   atomic.Int64 // bytes since the timer was last reset
	idle    time.Duration
	timer   *time.Timer
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stalled *StallError
}

// cause is err, or the stall when the timer is what ended the request.
func (w *stallWatch) cause(err error) error {
	if context.Cause(w.ctx) == w.stalled {
		return w.stalled
	}
	return err
}

// progress counts n bytes moved, and resets the timer once they add up to stallProgress.
func (w *stallWatch) progress(n int) {
	if w.moved.Add(int64(n)) >= stallProgress {
		w.moved.Store(0)
		w.timer.Reset(w.idle)
	}
}

func (w *stallWatch) stop() {
	w.timer.Stop()
	w.cancel(nil)
}

// watchedBody counts what its request moves (stallWatch.progress): the request body as the
// transport sends it, the response body as the caller reads it. Closing the response body
// ends the request's watch.
type watchedBody struct {
	rc     io.ReadCloser
	w      *stallWatch
	closes bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.w.progress(n)
	if err != nil && err != io.EOF {
		err = b.w.cause(err)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	if b.closes {
		b.w.stop()
	}
	return err
}
