// Package netfail is the one rule for failures to reach a server, shared by the source
// downloads of `ci build` (pipeline/source) and the release and image lookups of `ci
// check-updates` (pipeline/upstream): what kind of failure it was (a host name that does not
// resolve, a refused connection, a TLS error, a timeout, a connection cut off, an HTTP
// status), at which host, and whether running again can help (Transient). Retry loops and the
// messages that say "run again" ask Transient, so a failure is never retried while its
// message says it is not transient, or the other way round. It imports nothing of this
// repository, so every package that talks to a server can use it.
package netfail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// Kind is what went wrong on the way to a server.
type Kind int

const (
	// None: not a failure to reach a server (a checksum, a flag, a file): the error says
	// what it is.
	None Kind = iota
	// DNS: the host name did not resolve. "No such host" (NXDOMAIN) is not transient: a
	// typo, or a machine without the network's DNS (offline), answers the same next time.
	// A resolver that did not answer or failed (SERVFAIL) is.
	DNS
	// Refused: nothing accepted the connection (no server on that port, yet). Transient: a
	// server being restarted comes back.
	Refused
	// TLS: the handshake failed (a certificate this machine does not trust, a name it was
	// not issued for, a server that does not speak TLS there). Not transient.
	TLS
	// Timeout: no answer in time (a dial, the response, a body that stopped, the run's
	// deadline). Transient.
	Timeout
	// Reset: the connection was cut off (reset, closed before an answer, a body cut short).
	// Transient.
	Reset
	// Status: the server answered with an HTTP status that is not the one asked for
	// (*HTTPStatusError); transient for 5xx, 429 and 408 only.
	Status
)

// String names the kind as the messages do.
func (k Kind) String() string {
	switch k {
	case DNS:
		return "DNS failure"
	case Refused:
		return "connection refused"
	case TLS:
		return "TLS error"
	case Timeout:
		return "timeout"
	case Reset:
		return "connection cut off"
	case Status:
		return "HTTP error"
	}
	return "error"
}

// Failure is one classified failure.
type Failure struct {
	Kind Kind
	// Host is the server as the URL names it (host or host:port), or the name that did not
	// resolve; "" when the error does not say.
	Host string
	// Cause is what the lowest layer said ("no such host", "x509: certificate signed by
	// unknown authority", "HTTP 503 Service Unavailable").
	Cause     string
	Transient bool
}

// Connection reports whether the failure is about reaching the host at all (every request to
// it fails the same way), rather than an answer about one file: such failures are reported
// once per host, not once per file.
func (f Failure) Connection() bool {
	return f.Kind != None && f.Kind != Status && f.Host != ""
}

// Describe is "HOST: KIND (CAUSE)".
func (f Failure) Describe() string {
	s := f.Kind.String()
	if f.Cause != "" && f.Cause != s {
		s += " (" + f.Cause + ")"
	}
	if f.Host != "" {
		s = f.Host + ": " + s
	}
	return s
}

// String is Describe with ", transient" or ", not transient".
func (f Failure) String() string {
	s := f.Describe()
	if f.Transient {
		return s + ", transient"
	}
	return s + ", not transient"
}

// Classify says what kind of failure err is, at which host. An error joining several causes
// is classified by the first one found (Causes splits it).
func Classify(err error) Failure {
	f := Failure{Kind: kind(err), Transient: Transient(err)}
	if f.Kind == None {
		return f
	}
	f.Host, f.Cause = host(err), cause(err, f.Kind)
	return f
}

// kind finds the most telling kind in err's chain: an HTTP answer, then TLS, DNS, a refused
// connection, a timeout, a connection cut off.
func kind(err error) Kind {
	var (
		se      *HTTPStatusError
		dns     *net.DNSError
		timeout interface{ Timeout() bool }
	)
	switch {
	case err == nil:
		return None
	case errors.As(err, &se):
		return Status
	case isTLS(err):
		return TLS
	case errors.As(err, &dns):
		return DNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT),
		errors.As(err, &timeout) && timeout.Timeout():
		return Timeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), isURLEOF(err):
		return Reset
	}
	return None
}

// isTLS reports a failed TLS handshake: a certificate not trusted or not for this name, or
// a server that does not speak TLS on that port.
func isTLS(err error) bool {
	var (
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		ci  x509.CertificateInvalidError
		cv  *tls.CertificateVerificationError
		rh  tls.RecordHeaderError
		al  tls.AlertError
		sys x509.SystemRootsError
	)
	return errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &cv) ||
		errors.As(err, &rh) || errors.As(err, &al) || errors.As(err, &sys)
}

// isURLEOF is a request whose connection was closed before any answer (net/http returns
// io.EOF inside the *url.Error).
func isURLEOF(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && errors.Is(ue.Err, io.EOF)
}

// host is the server err is about: the request's URL, else the name that did not resolve,
// else the address dialled.
func host(err error) string {
	var (
		ue  *url.Error
		dns *net.DNSError
		op  *net.OpError
	)
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			return u.Host
		}
	}
	if errors.As(err, &dns) && dns.Name != "" {
		return dns.Name
	}
	if errors.As(err, &op) && op.Addr != nil {
		return op.Addr.String()
	}
	return ""
}

// cause is the lowest layer's words for err, without the request and address that the
// message names elsewhere.
func cause(err error, k Kind) string {
	var (
		se  *HTTPStatusError
		dns *net.DNSError
		ue  *url.Error
	)
	switch {
	case k == Status && errors.As(err, &se):
		return "HTTP " + strconv.Itoa(se.Code) + " " + http.StatusText(se.Code)
	case k == DNS && errors.As(err, &dns):
		return dns.Err
	case k == TLS:
		for e := err; e != nil; e = errors.Unwrap(e) {
			if isTLS(e) && !isTLS(errors.Unwrap(e)) {
				return e.Error()
			}
		}
	case k == Refused:
		return "" // the kind says it all
	}
	// The innermost error, which is what a *url.Error and *net.OpError wrap.
	inner := err
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	for {
		next := errors.Unwrap(inner)
		if next == nil {
			break
		}
		inner = next
	}
	return strings.TrimPrefix(inner.Error(), "net/http: ")
}

// Transient reports whether running again can help: a network timeout (also the run's
// deadline or a stalled body), a connection refused, reset or cut short, a DNS resolver that
// did not answer, an HTTP 5xx, 429 or 408 answer. Everything else (a host name that does not
// exist, a TLS certificate this machine does not trust, a 401, 403 or 404, a bad track, an
// unusable cache directory, a missing HOME, a checksum or signature that does not match, a
// size limit) gives the same answer on the next run until a person fixes what it names. An
// error type that knows says so with a Retryable() bool method; joined and wrapped errors
// are transient only when all of their causes are.
func Transient(err error) bool {
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
			return Transient(next)
		}
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for _, e := range errs {
			if e != nil && !Transient(e) {
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
	case err == context.DeadlineExceeded, err == io.ErrUnexpectedEOF, err == syscall.ECONNREFUSED,
		err == syscall.ECONNRESET, err == syscall.ECONNABORTED, err == syscall.EPIPE, err == syscall.ETIMEDOUT:
		return true
	}
	if isTLS(err) {
		// A handshake that timed out is a timeout; one that failed on the certificate is not
		// transient, whatever net.Error says about it.
		return false
	}
	if ue, ok := err.(*url.Error); ok && ue.Err == io.EOF {
		return true // closed before any answer
	}
	// Only err itself: a cause further down is classified where Transient reaches it, so
	// that one permanent cause among several is not outvoted.
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return true
	}
	dns, ok := err.(*net.DNSError)
	return ok && !dns.IsNotFound && (dns.IsTemporary || dns.IsTimeout)
}

// Causes splits err into its separate causes: the errors below each join (errors.Join, a
// fmt.Errorf with several %w), recursively; the text that wraps a join is left out. An error
// without a join is its own single cause.
func Causes(err error) []error {
	if err == nil {
		return nil
	}
	for e := err; e != nil; {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, c := range j.Unwrap() {
				out = append(out, Causes(c)...)
			}
			return out
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return []error{err}
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
