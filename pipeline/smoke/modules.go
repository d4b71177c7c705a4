package smoke

import (
	"context"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// HTTP3ModuleFlag is the configure flag of plan.ModuleHTTP3: with it the suite checks HTTP/3 and
// the mounted tls.conf keeps its QUIC lines.
var HTTP3ModuleFlag = moduleFlag(plan.ModuleHTTP3)

func moduleFlag(name string) string {
	for _, m := range plan.Modules {
		if m.Name == name {
			return m.Flag
		}
	}
	panic("smoke: plan.Modules has no module " + name)
}

// Wants reports whether the image must have the module whose configure flag is flag (a
// plan.Modules Flag). The expected modules decide; when none are expected (Modules nil),
// the image's own `nginx -V` output does: nginxV is called only then, and returns "" when
// it could not be read (not wanted). This is the one rule for every runner and for the
// build's gate, so that what the suite checks, the tls.conf a runner mounts and the skips a
// build accepts always agree.
func (e Expect) Wants(flag string, nginxV func() string) bool {
	if e.Modules != nil {
		return slices.Contains(e.Modules, flag)
	}
	return nginxV != nil && strings.Contains(nginxV(), flag)
}

// moduleWanted decides whether the image must have a module (Expect.Wants, with this run's
// nginx -V).
func (r *runner) moduleWanted(ctx context.Context, flag string) bool {
	return r.o.Expect.Wants(flag, func() string {
		out, _ := r.nginxV(ctx)
		return out
	})
}
