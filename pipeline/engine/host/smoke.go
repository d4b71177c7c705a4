package host

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/ocirun"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// SmokeImage runs img in runc the way it is meant to run (its user, read-only root, tmpfs
// on the writable directories, no capabilities, an isolated network namespace), with
// smoke.PrepareTLS's certificate and tls.conf mounted at plan.Runtime.TLSDir, and returns
// the suite's table. The error is for failures to get that far (unpack, a missing tls.conf
// block); failed checks are in the report (Report.Err).
// opts are the engine's options that concern it (WithSmokeConfD, WithSmokeNoTLS); the
// runc and umoci commands go to o.Progress.
func SmokeImage(ctx context.Context, img v1.Image, o smoke.Options, opts ...Option) (smoke.Report, error) {
	return smokeImage(ctx, img, o, makeOptions(opts))
}

func smokeImage(ctx context.Context, img v1.Image, o smoke.Options, eo options) (smoke.Report, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return smoke.Report{}, fmt.Errorf("reading the image's config: %w", err)
	}
	if cf.Architecture != runtime.GOARCH {
		// Another architecture's image runs here under qemu-user (binfmt_misc), slower.
		emu, ok := emulators[cf.Architecture]
		if !ok {
			return smoke.Report{}, fmt.Errorf("the image is %s/%s, which this linux/%s machine cannot run", cf.OS, cf.Architecture, runtime.GOARCH)
		}
		if err := EmulationReady(emu); err != nil {
			return smoke.Report{}, fmt.Errorf("smoke-testing a %s image on this linux/%s machine: %w", cf.Architecture, runtime.GOARCH, err)
		}
		o.Emulated = true
	}
	if o.Expect.Arch == "" {
		o.Expect.Arch = cf.Architecture
	}
	b, err := ocirun.Prepare(ctx, img, ocirun.WithProgress(o.Progress))
	if err != nil {
		return smoke.Report{}, err
	}
	defer b.Close()
	return smokeBundle(ctx, b, o, eo)
}

// emulators are the binfmt_misc handlers that run another architecture's images here.
var emulators = map[string]string{"arm64": "qemu-aarch64", "amd64": "qemu-x86_64"}

// nginxConf is the image's nginx.conf (the runtime contract), which documents tls.conf.
const nginxConf = "/etc/nginx/nginx.conf"

// runtimeTmpfs gives a container the runtime contract's writable directories (and /tmp):
// the image's root is read-only, and nginx cannot start without them. The Dagger engine
// mounts the same list (plan.Runtime.Tmpfs) in its service.
func runtimeTmpfs() ocirun.Option { return ocirun.WithTmpfs(plan.Runtime.Tmpfs()...) }

func smokeBundle(ctx context.Context, b *ocirun.Bundle, o smoke.Options, eo options) (smoke.Report, error) {
	runOpts := []ocirun.Option{runtimeTmpfs()}
	if eo.confD != "" {
		runOpts = append(runOpts, ocirun.WithMount(eo.confD, plan.Runtime.ConfDir, true))
	}
	if !eo.noTLS {
		mat, dir, err := prepareTLS(ctx, b, o)
		if err != nil {
			return smoke.Report{}, err
		}
		defer os.RemoveAll(dir)
		o.TLS = mat
		runOpts = append(runOpts, ocirun.WithMount(dir, plan.Runtime.TLSDir, true))
	}
	ctr, err := b.Start(ctx, runOpts...)
	if err != nil {
		// Nothing runs, but the image's files can still be checked, and every runtime
		// check says why it failed.
		return smoke.Run(ctx, smoke.NotStarted(b.RootFS(), err), o), nil
	}
	rep := smoke.Run(ctx, ctr, o)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ctr.Stop(stopCtx); err != nil {
		rep.Results = append(rep.Results, smoke.Result{Name: "stop", Status: smoke.Fail, Detail: err.Error()})
	}
	return rep, nil
}

// prepareTLS reads the image's nginx.conf from the unpacked root filesystem and asks
// smoke.PrepareTLS for the directory to mount; whether tls.conf keeps its QUIC lines comes
// from the expected modules or, when none are expected, the image's own `nginx -V`.
func prepareTLS(ctx context.Context, b *ocirun.Bundle, o smoke.Options) (*smoke.TLS, string, error) {
	conf, err := smoke.ReadImageFile(b.RootFS(), nginxConf)
	if err != nil {
		return nil, "", fmt.Errorf("reading the image's nginx.conf: %w", err)
	}
	bin := o.Binary
	if bin == "" {
		bin = plan.Runtime.Binary
	}
	var runErr error
	var nginxV *string // run once, for QUIC and the catalogue modules' probes
	wants := func(flag string) bool {
		return o.Expect.Wants(flag, func() string {
			if nginxV == nil {
				so, se, code, err := b.Run(ctx, []string{bin, "-V"}, runtimeTmpfs())
				if err != nil {
					runErr = fmt.Errorf("running nginx -V to see its modules: %w", err)
				}
				out := string(so) + string(se)
				if err != nil || code != 0 {
					// A failing nginx -V: the checks will show why; test without QUIC meanwhile.
					out = ""
				}
				nginxV = &out
			}
			return *nginxV
		})
	}
	http3 := wants(smoke.HTTP3ModuleFlag)
	if runErr != nil {
		return nil, "", runErr
	}
	uid, gid := b.User()
	mat, dir, err := smoke.PrepareTLS(conf, http3, "", uid, gid, wants)
	if err != nil {
		return nil, "", fmt.Errorf("%w (ci smoke --no-tls, host.WithSmokeNoTLS, skips the TLS checks)", err)
	}
	return mat, dir, nil
}
