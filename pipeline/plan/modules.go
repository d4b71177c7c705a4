package plan

import (
	"fmt"
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
	// source first, then the library it links (lock.OptionalRequires). Empty for nginx's own.
	Components []string
	// Conf is the file under files/ that turns the module on, shipped as
	// /etc/nginx/compression.d/<name>.conf only when the module is compiled in: the shipped
	// nginx.conf includes that directory, so it stays valid for a build without the module.
	Conf string
}

// Modules are the optional modules the plan knows. Names follow nginx's configure flags
// without the --with- prefix and _module suffix.
var Modules = []Module{
	{Name: "threads", Flag: "--with-threads"},
	{Name: "file-aio", Flag: "--with-file-aio"},
	{Name: "http_ssl", Flag: "--with-http_ssl_module"},
	{Name: "http_v2", Flag: "--with-http_v2_module"},
	{Name: ModuleHTTP3, Flag: "--with-http_v3_module", Requires: []string{"http_ssl"}},
	{Name: "http_realip", Flag: "--with-http_realip_module"},
	{Name: "http_addition", Flag: "--with-http_addition_module"},
	{Name: "http_auth_request", Flag: "--with-http_auth_request_module"},
	{Name: "http_dav", Flag: "--with-http_dav_module"},
	{Name: "http_gunzip", Flag: "--with-http_gunzip_module"},
	{Name: "http_gzip_static", Flag: "--with-http_gzip_static_module"},
	{Name: "http_random_index", Flag: "--with-http_random_index_module"},
	{Name: "http_secure_link", Flag: "--with-http_secure_link_module"},
	{Name: "http_slice", Flag: "--with-http_slice_module"},
	{Name: "http_stub_status", Flag: "--with-http_stub_status_module"},
	{Name: "http_sub", Flag: "--with-http_sub_module"},
	{Name: "stream", Flag: "--with-stream"},
	{Name: "stream_ssl", Flag: "--with-stream_ssl_module", Requires: []string{"stream"}},
	{Name: "stream_ssl_preread", Flag: "--with-stream_ssl_preread_module", Requires: []string{"stream"}},
	{Name: "stream_realip", Flag: "--with-stream_realip_module", Requires: []string{"stream"}},
	{Name: "mail", Flag: "--with-mail"},
	{Name: "mail_ssl", Flag: "--with-mail_ssl_module", Requires: []string{"mail"}},
	{Name: "pcre-jit", Flag: "--with-pcre-jit"},
	// Third-party, compiled in statically (the image has no dynamic modules). The flag's
	// relative path is where the nginx stage copies the module's source: nginx -V prints it,
	// so it must not name an executor's directory.
	{Name: "brotli", Flag: "--add-module=../ngx_brotli", Components: []string{lock.NgxBrotli, lock.Brotli}, Conf: "compression.d/brotli.conf"},
	{Name: "zstd", Flag: "--add-module=../zstd_nginx_module", Components: []string{lock.ZstdNginxModule, lock.Zstd}, Conf: "compression.d/zstd.conf"},
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

func lookupModule(name string) (Module, bool) {
	for _, m := range Modules {
		if m.Name == name {
			return m, true
		}
	}
	return Module{}, false
}

// moduleFlags validates a module set and returns its configure flags in the order of Modules
// (so the configure line does not depend on the order the caller listed them in).
func moduleFlags(l *lock.Lock, names []string) ([]string, []string, error) {
	want := map[string]bool{}
	for _, n := range names {
		if _, ok := lookupModule(n); !ok {
			known := make([]string, 0, len(Modules))
			for _, m := range Modules {
				known = append(known, m.Name)
			}
			sort.Strings(known)
			return nil, nil, fmt.Errorf("unknown nginx module %q: known modules are %s", n, strings.Join(known, ", "))
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
