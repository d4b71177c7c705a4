package daggerexec

import (
	"context"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/imagefs"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// Smoke runs pipeline/smoke's suite against img served by the engine, the way
// the host engine does under runc (host.SmokeImage): smoke.PrepareTLS's certificate and
// tls.conf are mounted at plan.Runtime.TLSDir, the image is started as a
// service, and every check runs against it. The error is for failures to get that far;
// failed checks are in the report, and report.Err() must stop any tag from moving.
//
// Checks the host cannot observe through the service's TCP tunnels (UDP, processes,
// mounts, output) are then taken from the smoke client run inside the engine (see
// inEngine.go), each such row saying where it was observed; what nothing observes stays
// skipped with the reasons, and the build (pipeline/forge) counts such a skip as a failure.
func (e *Executor) Smoke(ctx context.Context, p *plan.Plan, img v1.Image, o smoke.Options) (smoke.Report, error) {
	conf, err := imagefs.ReadFile(img, nginxConf)
	if err != nil {
		return smoke.Report{}, fmt.Errorf("dagger smoke: %w", err)
	}
	// The expected modules decide QUIC, as they decide the suite's HTTP/3 check (a build
	// always names them: no nginx -V is needed before the service starts).
	http3 := o.Expect.Wants(smoke.HTTP3ModuleFlag, nil)
	uid, gid := plan.Runtime.UID(), plan.Runtime.GID()
	mat, dir, err := smoke.PrepareTLS(conf, http3, "", uid, gid, func(flag string) bool { return o.Expect.Wants(flag, nil) })
	if err != nil {
		return smoke.Report{}, fmt.Errorf("dagger smoke: %w", err)
	}
	defer os.RemoveAll(dir)
	o.TLS = mat
	if o.UID == 0 {
		o.UID = uid
	}

	root, err := moduleRoot()
	if err != nil {
		return smoke.Report{}, err
	}
	if err := e.Connect(ctx); err != nil {
		return smoke.Report{}, err
	}
	// Another architecture's image runs in the engine under qemu-user (binfmt_misc on the
	// engine's machine), slower: the suite scales its timeouts (smoke.Options.Emulated).
	cf, err := img.ConfigFile()
	if err != nil {
		return smoke.Report{}, fmt.Errorf("dagger smoke: reading the image's config: %w", err)
	}
	arch, err := e.engineArch(ctx)
	if err != nil {
		return smoke.Report{}, err
	}
	if cf.Architecture != arch {
		o.Emulated = true
	}
	if o.Expect.Arch == "" {
		o.Expect.Arch = cf.Architecture
	}
	e.sink.Send(progress.Detailf("dagger smoke: building the smoke client for %s in the engine from %s", p.Platform, root))
	client, err := e.smokeClient(p, root).Sync(ctx)
	if err != nil {
		return smoke.Report{}, fmt.Errorf("dagger smoke: building the in-engine smoke client (%s) from %s: %w%s", plan.SmokeClientMain, root, err, stderrTail(err))
	}

	t, err := e.Serve(ctx, p, img, dir)
	if err != nil {
		return smoke.Report{}, err
	}
	defer t.Close()
	return e.inEngine(ctx, p, t, client, o, smoke.Run(ctx, t, o))
}

// nginxConf is the image's nginx.conf (the runtime contract), which documents tls.conf.
const nginxConf = "etc/nginx/nginx.conf"
