package source

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
)

// The one rule for "will running again help?": a failure is transient when every cause it
// wraps is one that clears by itself: a network timeout (also the run's deadline or a stalled
// body), a connection reset or cut short, an HTTP 5xx, 429 or 408 answer. Everything else (a
// 401, 403 or 404, a bad track, an unusable cache directory, a missing HOME, a checksum or
// signature that does not match, a size limit) gives the same answer on the next run until a
// person fixes what it names. Messages that say "run again" and retry loops ask Retryable.

// Retryable reports whether err is transient (see above). An error type that knows says so
// with a Retryable() bool method; joined and wrapped errors are transient only when all of
// their causes are.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if r, ok := err.(interface{ Retryable() bool }); ok {
		return r.Retryable()
	}
	if leafTransient(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return Retryable(next)
		}
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for _, e := range errs {
			if e != nil && !Retryable(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return false
}

// leafTransient classifies the standard library's errors that are transient by nature.
func leafTransient(err error) bool {
	switch {
	case err == context.DeadlineExceeded, err == io.ErrUnexpectedEOF,
		err == syscall.ECONNRESET, err == syscall.ECONNABORTED, err == syscall.EPIPE, err == syscall.ETIMEDOUT:
		return true
	}
	// Only err itself: a cause further down is classified where Retryable reaches it, so
	// that one permanent cause among several is not outvoted.
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return true
	}
	dns, ok := err.(*net.DNSError)
	return ok && dns.IsTemporary
}

// HTTPStatusError is an HTTP answer that is not the one asked for. What is the request
// ("GET https://...", "listing /repos/o/r/tags"); Detail is what the server said, redacted
// by whoever built the error.
type HTTPStatusError struct {
	What   string
	Code   int
	Detail string
}

func (e *HTTPStatusError) Error() string {
	s := e.What + ": HTTP " + strconv.Itoa(e.Code)
	if e.Detail != "" {
		return s + ": " + e.Detail
	}
	return s + " " + http.StatusText(e.Code)
}

// Retryable is true for a server's own failure (5xx) and for "slow down" (429, 408); a
// refusal (401, 403, 404, ...) answers the same until the request changes.
func (e *HTTPStatusError) Retryable() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout
}

// stallError is a body that stopped arriving: no byte for the stall timeout.
type stallError struct{ After string }

func (e *stallError) Error() string   { return "no data received for " + e.After }
func (e *stallError) Retryable() bool { return true }
