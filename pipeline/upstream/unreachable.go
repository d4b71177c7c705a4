package upstream

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
)

// Unreachable is one server that a run's lookups (or downloads) could not reach, all the
// same way: its name does not resolve, it refuses connections, its certificate is not
// trusted, it did not answer. It is reported once, naming what failed, instead of once per
// component (issue 40: offline, the same DNS failure was printed twelve times, with fixes
// about HOME and XDG_CACHE_HOME).
type Unreachable struct {
	Host string
	// What is the kind, the cause and whether it is transient: "DNS failure (no such host),
	// not transient".
	What string
	// Names are the components and images that failed this way ("zlib", "openssl 3.5.4",
	// "builder image").
	Names []string
	// Fix is the way out, in terms of check-updates' flags.
	Fix string
}

func (u Unreachable) String() string {
	return fmt.Sprintf("%s: %s: failed for %s; to resolve: %s", u.Host, u.What, strings.Join(u.Names, ", "), u.Fix)
}

// GroupUnreachable splits refused: the lookups and updates whose every cause is failing to
// reach a server become one Unreachable per server and kind of failure (in the order first
// met); the rest are returned as they are.
func (r *Run) GroupUnreachable(refused []Refusal) ([]Unreachable, []Refusal) {
	var (
		out  []Unreachable
		rest []Refusal
		at   = map[string]int{}
	)
	for _, ref := range refused {
		causes := netfail.Causes(ref.Err)
		var fails []netfail.Failure
		for _, c := range causes {
			if f := netfail.Classify(c); f.Connection() {
				fails = append(fails, f)
			}
		}
		if len(fails) == 0 || len(fails) != len(causes) {
			rest = append(rest, ref)
			continue
		}
		name := ref.Name
		if ref.Target != "" {
			name += " " + ref.Target
		}
		// nginx's lookup falls back to nginx.org: it is named under both servers.
		for _, f := range fails {
			key := f.Host + "\x00" + f.Kind.String()
			i, ok := at[key]
			if !ok {
				i = len(out)
				at[key] = i
				what := strings.TrimPrefix(f.String(), f.Host+": ")
				out = append(out, Unreachable{Host: f.Host, What: what, Fix: r.unreachableFix(f, ref)})
			}
			if n := out[i].Names; len(n) == 0 || n[len(n)-1] != name {
				out[i].Names = append(out[i].Names, name)
			}
		}
	}
	return out, rest
}

// unreachableFix says what gets the run past f, with the flag that names the server (the
// failed refusal tells an image lookup from the others).
func (r *Run) unreachableFix(f netfail.Failure, ref Refusal) string {
	const again = "go run ./ci check-updates"
	flag, given := r.flagFor(f.Host, ref)
	switch f.Kind {
	case netfail.DNS:
		switch {
		case f.Transient:
			return "this machine's DNS did not answer: run " + again + " again"
		case given:
			return "this machine cannot resolve " + f.Host + ": check the host name in " + flag
		}
		return "this machine cannot resolve " + f.Host + " (offline, or no DNS for it): run where it resolves (the scheduled workflow does), or name a server this machine reaches with " + flag
	case netfail.Refused:
		return "nothing accepts connections at " + f.Host + ": check the port in " + flag + ", or run " + again + " again once the server is up"
	case netfail.TLS:
		return "this machine does not trust " + f.Host + "'s certificate (a TLS-intercepting proxy?): add that CA to the system's (SSL_CERT_FILE), or name a server it trusts with " + flag
	case netfail.Timeout:
		if r.Timeout > 0 {
			return fmt.Sprintf("no answer within the run's %s deadline: run %s again, or give a longer --timeout", r.Timeout, again)
		}
		return "no answer in time: run " + again + " again"
	}
	return f.Host + " cut the connection off: run " + again + " again"
}

// flagFor is the flag that names host for this refusal, and whether it was given (not the
// default server).
func (r *Run) flagFor(host string, ref Refusal) (string, bool) {
	is := func(u string) bool {
		p, err := url.Parse(u)
		return err == nil && p.Host == host
	}
	switch {
	case strings.HasSuffix(ref.Name, " image") && r.Registry != "":
		return "--registry HOST (or skip the images: --skip-images)", true
	case strings.HasSuffix(ref.Name, " image"):
		return "--registry HOST (or skip the images: --skip-images)", false
	case r.Mirror != "" && is(r.Mirror):
		return "--mirror URL", true
	case is(orDefault(r.GitHubAPI, DefaultGitHubAPI)):
		return "--github-api URL", r.GitHubAPI != "" && r.GitHubAPI != DefaultGitHubAPI
	case is(orDefault(r.NginxOrg, DefaultNginxOrg)):
		return "--nginx-org URL", r.NginxOrg != "" && r.NginxOrg != DefaultNginxOrg
	}
	for _, ks := range r.Keyservers {
		if is(strings.ReplaceAll(ks, "%s", "")) {
			return "--keyserver URL", true
		}
	}
	return "--mirror URL (new releases' files from a server this machine reaches)", false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
