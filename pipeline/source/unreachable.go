package source

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
)

// unreachableError is one server that the downloads of several components could not reach
// the same way (its name does not resolve, it refuses connections, its certificate is not
// trusted, it does not answer): said once, with the components, whether it was retried and
// the way out, instead of once per file (issue 40: an offline build printed the same DNS
// failure for each of seven sources, each "gave up after 4 attempts").
type unreachableError struct {
	Failure netfail.Failure
	// Components are the downloads that failed this way ("zlib 1.3.1").
	Components []string
	// Tries is how often each was tried (1 when the failure is not transient).
	Tries int
	// Fix is the way out: the flag that points the build at a server it can reach.
	Fix  string
	Errs []error
}

func (e *unreachableError) Error() string {
	tried := "not retried"
	if e.Tries > 1 {
		tried = fmt.Sprintf("tried %d times", e.Tries)
	}
	return fmt.Sprintf("%s, %s: the downloads of %s; to resolve: %s", e.Failure, tried, strings.Join(e.Components, ", "), e.Fix)
}

// Unwrap gives errors.Is and errors.As each download's own error.
func (e *unreachableError) Unwrap() []error { return e.Errs }

// groupUnreachable turns the failed downloads (component label, error; in the order to
// report them) into one *unreachableError per server and kind of failure, in the order the
// servers were first named, and leaves the other errors as they are, in order.
func (f *Fetcher) groupUnreachable(labels []string, errs []error) []error {
	var out []error
	groups := map[string]*unreachableError{}
	for i, err := range errs {
		causes := netfail.Causes(err)
		var fails []netfail.Failure
		for _, c := range causes {
			if fl := netfail.Classify(c); fl.Connection() {
				fails = append(fails, fl)
			}
		}
		if len(fails) == 0 || len(fails) != len(causes) {
			out = append(out, err) // a failure about this file (or several kinds): its own line
			continue
		}
		fl := fails[0]
		key := fl.Host + "\x00" + fl.Kind.String()
		g, ok := groups[key]
		if !ok {
			tries := 1
			if fl.Transient {
				tries = f.retries + 1
			}
			g = &unreachableError{Failure: fl, Tries: tries, Fix: f.unreachableFix(fl)}
			groups[key] = g
			out = append(out, g)
		}
		g.Components = append(g.Components, labels[i])
		g.Errs = append(g.Errs, err)
	}
	return out
}

// unreachableFix is the way out of fl: a mirror the build reaches instead (--mirror), or a
// fix to the mirror or key server that was given.
func (f *Fetcher) unreachableFix(fl netfail.Failure) string {
	role, flag := "", "--mirror URL"
	switch {
	case f.mirror != "" && hostOf(f.mirror) == fl.Host:
		role = "the --mirror " + hostOf(f.mirror)
	case f.keyserversSet && f.isKeyserver(fl.Host):
		role, flag = "the --keyserver "+fl.Host, "--keyserver URL"
	}
	if role != "" {
		switch fl.Kind {
		case netfail.DNS:
			if fl.Transient {
				return "this machine's DNS did not answer for " + role + ": run again"
			}
			return "this machine cannot resolve the host name of " + role + ": check its spelling in " + flag
		case netfail.Refused:
			return "nothing accepts connections at " + role + ": start its server (docs/offline.md) or fix the port in " + flag + ", then run again"
		case netfail.TLS:
			return "this machine does not trust the certificate of " + role + ": every file is checked by its SHA-256 and signature all the same, so a plain http:// URL is fine; or add its CA to the system's (SSL_CERT_FILE)"
		}
		return role + " did not answer or cut the connection off: check that server, then run again"
	}
	const mirror = "--mirror URL (a server this machine reaches that holds the lock's files under their file names, URL/<file name>; the same checks; docs/offline.md)"
	switch fl.Kind {
	case netfail.DNS:
		if fl.Transient {
			return "this machine's DNS did not answer: run again, or fetch from a mirror: " + mirror
		}
		return "this machine cannot resolve " + fl.Host + " (offline, or no DNS for it): fetch from a mirror instead: " + mirror
	case netfail.TLS:
		return "this machine does not trust " + fl.Host + "'s certificate (a TLS-intercepting proxy?): add that CA to the system's (SSL_CERT_FILE), or fetch from a mirror: " + mirror
	}
	return "run again, or fetch from a mirror: " + mirror
}

// isKeyserver reports whether host is one of the key servers given.
func (f *Fetcher) isKeyserver(host string) bool {
	for _, ks := range f.keyservers {
		if hostOf(strings.ReplaceAll(ks, "%s", "")) == host {
			return true
		}
	}
	return false
}

// hostOf is u's host[:port], as netfail names a server.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}
