package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// DefaultModulesOf is the module set a plan of l compiles in without WithModules:
// DefaultModules plus every third-party module whose components l has.
func DefaultModulesOf(l *lock.Lock) []string {
	out := append([]string(nil), DefaultModules...)
	for _, m := range Modules {
		if len(m.Components) > 0 && l.HasComponents(m.Components...) {
			out = append(out, m.Name)
		}
	}
	return out
}

// Module is an optional nginx feature and the configure flag that compiles it in.
type Module struct {
	Name     string
	Flag     string
	Requires []string // other modules it cannot work without
	// Components are the lock components a third-party module is built from: the module's
	// source first, then the library it links (lock.Spec.Requires). Empty for nginx's own.
	Components []string
	// Conf is the file under files/ that turns the module on, shipped as
	// /etc/nginx/compression.d/<name>.conf only when the module is compiled in: the shipped
	// nginx.conf includes that directory, so it stays valid for a build without the module.
	Conf string
	// Summary is what the module adds, one line for `ci modules`.
	Summary string
	// Encoding is the content-coding a third-party compression module serves (lock.Spec's),
	// which the smoke suite asks for.
	Encoding string
}

// Modules are the optional modules the plan knows. Names follow nginx's configure flags
// without the --with- prefix and _module suffix.
var Modules = append([]Module{
	{Name: "threads", Flag: "--with-threads", Summary: "thread pools (aio threads): blocking file reads off the event loop"},
	{Name: "file-aio", Flag: "--with-file-aio", Summary: "asynchronous file I/O (aio on) for large files"},
	{Name: "http_ssl", Flag: "--with-http_ssl_module", Summary: "HTTPS: TLS for HTTP (ssl_* directives)"},
	{Name: "http_v2", Flag: "--with-http_v2_module", Summary: "HTTP/2 (listen ... ssl; http2 on)"},
	{Name: ModuleHTTP3, Flag: "--with-http_v3_module", Requires: []string{"http_ssl"}, Summary: "HTTP/3 over QUIC (listen ... quic)"},
	{Name: "http_realip", Flag: "--with-http_realip_module", Summary: "the client address from a trusted proxy's header (set_real_ip_from)"},
	{Name: "http_addition", Flag: "--with-http_addition_module", Summary: "text added before and after a response (add_before_body)"},
	{Name: "http_auth_request", Flag: "--with-http_auth_request_module", Summary: "authorization by a subrequest (auth_request)"},
	{Name: "http_dav", Flag: "--with-http_dav_module", Summary: "WebDAV write methods (PUT, DELETE, MKCOL, COPY, MOVE)"},
	{Name: "http_gunzip", Flag: "--with-http_gunzip_module", Summary: "gunzip of gzip responses for clients without gzip"},
	{Name: "http_gzip_static", Flag: "--with-http_gzip_static_module", Summary: "precompressed .gz files served as they are (gzip_static)"},
	{Name: "http_random_index", Flag: "--with-http_random_index_module", Summary: "a random file of a directory as its index"},
	{Name: "http_secure_link", Flag: "--with-http_secure_link_module", Summary: "links checked by hash and expiry (secure_link)"},
	{Name: "http_slice", Flag: "--with-http_slice_module", Summary: "large responses fetched and cached in slices (slice)"},
	{Name: "http_stub_status", Flag: "--with-http_stub_status_module", Summary: "basic status counters (stub_status)"},
	{Name: "http_sub", Flag: "--with-http_sub_module", Summary: "text substitution in responses (sub_filter)"},
	{Name: "stream", Flag: "--with-stream", Summary: "the TCP/UDP proxy and load balancer (stream {})"},
	{Name: "stream_ssl", Flag: "--with-stream_ssl_module", Requires: []string{"stream"}, Summary: "TLS for stream (terminating TLS for TCP)"},
	{Name: "stream_ssl_preread", Flag: "--with-stream_ssl_preread_module", Requires: []string{"stream"}, Summary: "routing TLS by SNI without terminating it (ssl_preread)"},
	{Name: "stream_realip", Flag: "--with-stream_realip_module", Requires: []string{"stream"}, Summary: "the client address from the PROXY protocol in stream"},
	{Name: "mail", Flag: "--with-mail", Summary: "the IMAP/POP3/SMTP proxy (mail {})"},
	{Name: "mail_ssl", Flag: "--with-mail_ssl_module", Requires: []string{"mail"}, Summary: "TLS for the mail proxy"},
	{Name: "pcre-jit", Flag: "--with-pcre-jit", Summary: "JIT-compiled regular expressions (locations, maps, rewrites)"},
}, thirdPartyModules()...)

// thirdPartyModules are the modules of the component table (lock.Specs' KindModule rows), in
// its order, compiled in statically (the image has no dynamic modules). The flag's relative
// path is where the nginx stage copies the module's source: nginx -V prints it, so it must
// not name an executor's directory.
func thirdPartyModules() []Module {
	var out []Module
	for _, s := range lock.Specs() {
		if s.Kind != lock.KindModule {
			continue
		}
		out = append(out, Module{Name: s.Module, Flag: s.ConfigureFlag, Components: append([]string{s.Name}, s.Requires...),
			Conf: s.Conf, Summary: s.Summary, Encoding: s.Encoding})
	}
	return out
}

// DefaultModules is nginx's own part of the default module set; the third-party modules
// whose components the lock has (see Module.Components) are added to it. It is the module set of the article this project grew from, which its users
// rely on: TLS with HTTP/2 and HTTP/3, the stream (TCP/UDP) proxy with TLS and SNI preread,
// thread pools and AIO for large files, and regex JIT. Mail is left out (the seed did too):
// nobody asked for a mail proxy, and every module is attack surface.
var DefaultModules = []string{
	"threads", "file-aio",
	"http_ssl", "http_v2", "http_v3", "http_realip", "http_gunzip", "http_gzip_static",
	"http_slice", "http_stub_status", "http_sub",
	"stream", "stream_ssl", "stream_ssl_preread",
	"pcre-jit",
}

// applyModules is the module set a --modules list gives against base (the default set):
// a plain list ("http_ssl,http_v2") replaces base; a list whose every entry starts with + or
// - ("+mail,-http_v3") adds to and removes from it. Adding a module base has, or removing
// one it lacks, changes nothing; the result is checked further by New (requirements,
// components in the lock).
func applyModules(base, list []string) ([]string, error) {
	var plain, add, remove []string
	for _, e := range list {
		name, op := e, byte(0)
		if e != "" && (e[0] == '+' || e[0] == '-') {
			name, op = e[1:], e[0]
		}
		if name == "" {
			return nil, fmt.Errorf("module list %q has an empty entry %q: give module names, comma-separated", strings.Join(list, ","), e)
		}
		if _, ok := lookupModule(name); !ok {
			return nil, unknownModule(name)
		}
		switch op {
		case '+':
			add = append(add, name)
		case '-':
			remove = append(remove, name)
		default:
			plain = append(plain, name)
		}
	}
	if len(plain) > 0 && len(add)+len(remove) > 0 {
		return nil, fmt.Errorf("module list %q mixes plain names (a new set: %s) with +/- changes to the default set: use one form", strings.Join(list, ","), strings.Join(plain, ","))
	}
	if len(plain) > 0 || len(list) == 0 {
		return plain, nil
	}
	for _, a := range add {
		for _, r := range remove {
			if a == r {
				return nil, fmt.Errorf("module list %q both adds and removes %s", strings.Join(list, ","), a)
			}
		}
	}
	var out []string
	has := map[string]bool{}
	for _, n := range base {
		if !slices.Contains(remove, n) && !has[n] {
			out = append(out, n)
			has[n] = true
		}
	}
	for _, n := range add {
		if !has[n] {
			out = append(out, n)
			has[n] = true
		}
	}
	return out, nil
}

// ConfigureFlags is the one mapping of module names (Plan.Modules, an image's record) to
// the configure flags nginx -V shows, which the smoke suite compares; a name this version
// does not know is an error that lists the known ones.
func ConfigureFlags(names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for _, name := range names {
		m, ok := lookupModule(name)
		if !ok {
			return nil, unknownModule(name)
		}
		out = append(out, m.Flag)
	}
	return out, nil
}

func unknownModule(name string) error {
	known := make([]string, 0, len(Modules))
	for _, m := range Modules {
		known = append(known, m.Name)
	}
	sort.Strings(known)
	return fmt.Errorf("unknown nginx module %q: known modules are %s (go run ./ci modules describes them)", name, strings.Join(known, ", "))
}

func lookupModule(name string) (Module, bool) {
	for _, m := range Modules {
		if m.Name == name {
			return m, true
		}
	}
	return Module{}, false
}

// ModuleFlags are the configure flags of the module set changes gives for l, as New makes it
// (WithModules: nil is l's default set, a plain list replaces it, +name and -name change it),
// without making a plan: what a build with that set compiled nginx with.
func ModuleFlags(l *lock.Lock, changes []string) ([]string, error) {
	mods := DefaultModulesOf(l)
	if changes != nil {
		var err error
		if mods, err = applyModules(mods, changes); err != nil {
			return nil, err
		}
	}
	flags, _, err := moduleFlags(l, mods)
	return flags, err
}

// moduleFlags validates a module set and returns its configure flags in the order of Modules
// (so the configure line does not depend on the order the caller listed them in).
func moduleFlags(l *lock.Lock, names []string) ([]string, []string, error) {
	want := map[string]bool{}
	for _, n := range names {
		if _, ok := lookupModule(n); !ok {
			return nil, nil, unknownModule(n)
		}
		want[n] = true
	}
	var flags, ordered []string
	for _, m := range Modules {
		if !want[m.Name] {
			continue
		}
		for _, r := range m.Requires {
			if !want[r] {
				return nil, nil, fmt.Errorf("nginx module %q needs module %q: add it to the module list", m.Name, r)
			}
		}
		if !l.HasComponents(m.Components...) {
			return nil, nil, fmt.Errorf("nginx module %q is built from the lock components %s, which the lock does not have all of: add them (pinned by URL, SHA-256 and signature) or drop the module", m.Name, strings.Join(m.Components, " and "))
		}
		flags = append(flags, m.Flag)
		ordered = append(ordered, m.Name)
	}
	return flags, ordered, nil
}

// ModuleHTTP3 is the module that serves HTTP/3 over QUIC: without it the smoke suite has no
// HTTP/3 to check, and tls.conf drops its QUIC lines.
const ModuleHTTP3 = "http_v3"
