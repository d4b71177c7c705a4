package image

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// WithModules names the nginx modules the binary was compiled with (plan.Plan.Modules).
// Annotations, history, licence and SBOM then list the lock components of those modules
// (plan.Module.Components) besides the required ones, and nothing else: `--modules` can leave
// out a module whose components the lock pins, and then nothing of it is in the image.
// Without this option the plan's default is assumed: every third-party module whose
// components the lock has.
func WithModules(names []string) Option {
	// Never nil once given: an empty list (no third-party module) differs from "not given".
	return func(o *options) { o.modules = append([]string{}, names...) }
}

// builtComponents are the lock's components nginx is built from, in lock order: the required
// ones, and the components of each third-party module compiled in (o.modules, or by default
// the plan's default set for l). A library pinned without its module (the test
// lock's zstd) is not linked, so it is not listed.
func builtComponents(l *lock.Lock, o options) []lock.Component {
	want := map[string]bool{}
	for _, name := range lock.ComponentOrder {
		want[name] = true
	}
	modules := builtModules(l, o)
	for _, m := range plan.Modules {
		if slices.Contains(modules, m.Name) {
			for _, c := range m.Components {
				want[c] = true
			}
		}
	}
	var out []lock.Component
	for _, c := range l.Components {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// builtModules are the modules nginx is built with: o.modules, or the plan's default set
// for l.
func builtModules(l *lock.Lock, o options) []string {
	if o.modules == nil {
		return plan.DefaultModulesOf(l)
	}
	return o.modules
}

// checkModules refuses a module list the plan would have refused: an unknown module, or a
// third-party module whose components the lock lacks (the SBOM would leave them out silently).
func checkModules(l *lock.Lock, o options) error {
	for _, name := range o.modules {
		known := false
		for _, m := range plan.Modules {
			if m.Name != name {
				continue
			}
			known = true
			if !l.HasComponents(m.Components...) {
				return fmt.Errorf("module %q is built from the lock components %s, which the lock does not all have: pass the lock the image was built from", name, strings.Join(m.Components, " and "))
			}
		}
		if !known {
			return fmt.Errorf("unknown nginx module %q in WithModules: pass plan.Plan.Modules", name)
		}
	}
	return nil
}

// matchAnnotations checks that the image's component annotations (written by Assemble) name
// exactly built, with the lock's versions and checksums: an SBOM made with other options or
// another lock than the image would describe something else.
func matchAnnotations(anns map[string]string, l *lock.Lock, built []lock.Component) error {
	in := map[string]bool{}
	for _, c := range built {
		in[c.Name] = true
	}
	const fix = "give SBOM the lock and the options (WithModules) the image was assembled with"
	for _, c := range l.Components {
		v, sum := anns[AnnotationPrefix+c.Name+".version"], anns[AnnotationPrefix+c.Name+".sha256"]
		switch {
		case in[c.Name] && v == "":
			return fmt.Errorf("the SBOM would list %s %s, but the image's annotations do not name it (the image was built without it): %s", c.Name, c.Version, fix)
		case in[c.Name] && (v != c.Version || sum != c.SHA256):
			return fmt.Errorf("the SBOM would list %s %s (sha256 %s), but the image's annotations say %q (sha256 %q): %s", c.Name, c.Version, c.SHA256, v, sum, fix)
		case !in[c.Name] && v != "":
			return fmt.Errorf("the image's annotations say it is built from %s %s, but the SBOM's options leave it out: %s", c.Name, v, fix)
		}
	}
	return nil
}

// sbomLicenseExpression is the licence of what nginx is built from (the image annotation's
// and the SBOM's image package): the required components', the built optional ones' and
// libcrypt's, each term once.
func sbomLicenseExpression(l *lock.Lock, o options) string {
	names := []string{lock.Nginx}
	if l != nil {
		names = append(names, l.TLS().Name, lock.PCRE2, l.ZlibLibrary().Name)
	} else {
		names = append(names, lock.OpenSSL, lock.PCRE2, lock.Zlib)
	}
	var built []lock.Component
	if l != nil {
		built = builtComponents(l, o)
	}
	for _, c := range built {
		if !slices.Contains(lock.ComponentOrder, c.Name) {
			names = append(names, c.Name)
		}
	}
	if o.libcrypt != "" {
		names = append(names, Libcrypt)
	}
	var parts []string
	seen := map[string]bool{}
	for _, n := range names {
		l := licenseOf(n)
		if strings.Contains(l, " ") {
			l = "(" + l + ")"
		}
		if !seen[l] { // nginx and ngx_brotli are both BSD-2-Clause: one term says it
			seen[l] = true
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " AND ")
}
