package daggerexec

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"dagger.io/dagger"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// The smoke test from inside the engine. The host-side Target (Serve) reaches the service
// only through TCP tunnels and cannot see its processes, mounts or output; the checks it
// cannot observe are then taken from two containers of the image under test inside the
// engine, each running the project's own smoke client (pipeline/smoke/cmd/smokeclient,
// built by the engine itself, see smokeclient.go, and mounted at plan.SmokeClientPath):
//
//	binding   bound to the nginx service as plan.SmokeServiceAlias: the network checks,
//	          straight to the service's TCP and UDP ports on the engine's network (QUIC
//	          included, which the host tunnels cannot carry).
//	observer  the client starts the image's entrypoint itself (plan.Runtime.Entrypoint, as
//	          the image's user, with the service's TLS mount and a fresh writable mount on
//	          each of plan.Runtime.Tmpfs) and runs the whole suite against it on loopback,
//	          observing its processes' users in /proc, its output, and the files of the
//	          root filesystem it changes while it runs.
//
// smoke.Combine joins the reports: a check the host could not observe takes the binding's
// result, then the observer's; every row says where it was observed.

// inEngineExec is one container of the in-engine smoke: the image (with the service's TLS
// mount) plus these mounts, maybe a service binding, and one exec of the client.
type inEngineExec struct {
	// Where is how the combined report names this observer.
	Where string
	// Binding is the alias the service is bound under; "" binds nothing.
	Binding string
	// Mounts come after the TLS mount the image container already has.
	Mounts []inEngineMount
	// Argv runs the client; its stdout is a JSON report (smoke.ReadJSON).
	Argv []string
}

type mountSource int

const (
	clientBinary mountSource = iota // the client, a file
	emptyDir                        // a fresh empty directory (a tmpfs of a read-only run)
)

type inEngineMount struct {
	Path   string
	Source mountSource
	Owner  string // "" root
}

// Where the combined report says a row was observed.
const (
	whereBinding  = "in the engine, via service binding"
	whereObserver = "in the engine, in a second container of the image that started nginx as its user"
)

// inEngineExecs is the mapping of the in-engine smoke: a pure function of the plan, so a
// test can check it without an engine. uid is the user the server must run as; modules
// are the configure flags the suite expects (smoke.Expect.Modules).
func inEngineExecs(p *plan.Plan, uid int, modules []string, emulated bool) []inEngineExec {
	ca := path.Join(plan.Runtime.TLSDir, smoke.TLSCertFile)
	client := inEngineMount{Path: plan.SmokeClientPath, Source: clientBinary}
	binding := smoke.ClientRequest{Address: plan.SmokeServiceAlias, TLSCA: ca, ExpectModules: modules, UID: uid, Emulated: emulated}
	observer := smoke.ClientRequest{Address: smoke.LoopbackHost, TLSCA: ca, ExpectModules: modules, UID: uid,
		Start: plan.Runtime.Entrypoint, Emulated: emulated}
	obs := inEngineExec{Where: whereObserver, Mounts: []inEngineMount{client},
		Argv: append([]string{plan.SmokeClientPath}, observer.Args()...)}
	for _, dir := range plan.Runtime.Tmpfs() {
		obs.Mounts = append(obs.Mounts, inEngineMount{Path: dir, Source: emptyDir, Owner: plan.Runtime.User})
	}
	return []inEngineExec{
		{Where: whereBinding, Binding: plan.SmokeServiceAlias, Mounts: []inEngineMount{client},
			Argv: append([]string{plan.SmokeClientPath}, binding.Args()...)},
		obs,
	}
}

// container applies x to the image container base (which holds the TLS mount).
func (x inEngineExec) container(c *dagger.Client, base *dagger.Container, client *dagger.File, svc *dagger.Service) *dagger.Container {
	ctr := base
	for _, m := range x.Mounts {
		switch m.Source {
		case clientBinary:
			ctr = ctr.WithMountedFile(m.Path, client)
		case emptyDir:
			ctr = ctr.WithMountedDirectory(m.Path, c.Directory(), dagger.ContainerWithMountedDirectoryOpts{Owner: m.Owner})
		}
	}
	if x.Binding != "" {
		ctr = ctr.WithServiceBinding(x.Binding, svc)
	}
	// Exit status 1 means failed checks, still reported on stdout.
	return ctr.WithExec(x.Argv, dagger.ContainerWithExecOpts{Expect: dagger.ReturnTypeAny})
}

// run runs x and parses the report it prints.
func (x inEngineExec) run(ctx context.Context, c *dagger.Client, base *dagger.Container, client *dagger.File, svc *dagger.Service) (smoke.Report, error) {
	ctr, err := x.container(c, base, client, svc).Sync(ctx)
	if err != nil {
		return smoke.Report{}, fmt.Errorf("running the smoke client %s: %w%s", x.Where, err, stderrTail(err))
	}
	out, err := ctr.Stdout(ctx)
	if err != nil {
		return smoke.Report{}, err
	}
	rep, err := smoke.ReadJSON([]byte(out))
	if err != nil {
		code, _ := ctr.ExitCode(ctx)
		errOut, _ := ctr.Stderr(ctx)
		return smoke.Report{}, fmt.Errorf("the smoke client %s (exit status %d): %w; its stderr:\n%s", x.Where, code, err, toolbox.TailLines(errOut, 40))
	}
	return rep, nil
}

// inEngine runs every in-engine observer against t's service (concurrently) and combines
// their reports into host's, in the order inEngineExecs gives.
func (e *Executor) inEngine(ctx context.Context, p *plan.Plan, t *Target, client *dagger.File, o smoke.Options, host smoke.Report) (smoke.Report, error) {
	execs := inEngineExecs(p, o.UID, o.Expect.Modules, o.Emulated)
	reps := make([]smoke.Report, len(execs))
	errs := make([]error, len(execs))
	var wg sync.WaitGroup
	for i, x := range execs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.sink.Send(progress.Detailf("dagger smoke: running the smoke client %s", x.Where))
			reps[i], errs[i] = x.run(ctx, e.client, t.ctr, client, t.svc)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return smoke.Report{}, fmt.Errorf("dagger smoke: %w", err)
	}
	rep := host
	for i, x := range execs {
		rep = smoke.Combine(rep, reps[i], x.Where)
	}
	return rep, nil
}
