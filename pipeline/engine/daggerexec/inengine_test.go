package daggerexec

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// lockPlan is the plan of the test lock (and the lock): what the tests that need no
// tarball map from.
func lockPlan(t *testing.T) (*plan.Plan, *lock.Lock) {
	t.Helper()
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	return p, l
}

// TestInEngineMapping: the in-engine smoke is two containers of the image, each with the
// client mounted at the plan's path: one bound to the service under the plan's alias
// running the client against it, one with a fresh writable mount owned by the runtime
// user on each of the plan's tmpfs paths, where the client starts the plan's entrypoint.
// Every path, alias and argument comes from the plan and pipeline/smoke.
func TestInEngineMapping(t *testing.T) {
	p, _ := lockPlan(t)
	uid := plan.Runtime.UID()
	modules := []string{"--with-http_ssl_module", "--with-http_v3_module"}
	execs := inEngineExecs(p, uid, modules, false)
	if len(execs) != 2 {
		t.Fatalf("%d in-engine execs, want the binding and the observer", len(execs))
	}
	bind, obs := execs[0], execs[1]
	ca := path.Join(plan.Runtime.TLSDir, smoke.TLSCertFile)
	client := inEngineMount{Path: plan.SmokeClientPath, Source: clientBinary}

	if bind.Binding != plan.SmokeServiceAlias || obs.Binding != "" {
		t.Errorf("bindings: %q and %q, want only the first bound as %q", bind.Binding, obs.Binding, plan.SmokeServiceAlias)
	}
	if !slices.Equal(bind.Mounts, []inEngineMount{client}) {
		t.Errorf("binding mounts = %+v, want only the client", bind.Mounts)
	}
	wantBind := append([]string{plan.SmokeClientPath},
		smoke.ClientRequest{Address: plan.SmokeServiceAlias, TLSCA: ca, ExpectModules: modules, UID: uid}.Args()...)
	if !slices.Equal(bind.Argv, wantBind) {
		t.Errorf("binding argv = %q\nwant %q", bind.Argv, wantBind)
	}

	wantMounts := []inEngineMount{client}
	for _, d := range plan.Runtime.Tmpfs() {
		wantMounts = append(wantMounts, inEngineMount{Path: d, Source: emptyDir, Owner: plan.Runtime.User})
	}
	if !slices.Equal(obs.Mounts, wantMounts) {
		t.Errorf("observer mounts = %+v\nwant %+v", obs.Mounts, wantMounts)
	}
	wantObs := append([]string{plan.SmokeClientPath},
		smoke.ClientRequest{Address: smoke.LoopbackHost, TLSCA: ca, ExpectModules: modules, UID: uid, Start: plan.Runtime.Entrypoint}.Args()...)
	if !slices.Equal(obs.Argv, wantObs) {
		t.Errorf("observer argv = %q\nwant %q", obs.Argv, wantObs)
	}
	// The observer's command ends with the image's own entrypoint, unchanged.
	if !slices.Equal(obs.Argv[len(obs.Argv)-len(plan.Runtime.Entrypoint):], plan.Runtime.Entrypoint) {
		t.Errorf("observer argv %q does not end with the entrypoint %q", obs.Argv, plan.Runtime.Entrypoint)
	}
	if bind.Where == obs.Where || bind.Where == "" || obs.Where == "" {
		t.Errorf("observers not named apart: %q, %q", bind.Where, obs.Where)
	}
	// The suite's expected modules reach the client (HTTP/3 needs to know QUIC is expected).
	if !slices.Contains(bind.Argv, "--"+smoke.FlagExpectModules+"="+strings.Join(modules, ",")) {
		t.Errorf("the expected modules do not reach the client: %q", bind.Argv)
	}
	// An emulated image's run reaches both clients (their timeouts and the AIO line), and
	// only an emulated one's.
	if slices.Contains(bind.Argv, "--"+smoke.FlagEmulated) {
		t.Errorf("a native run's client is told it is emulated: %q", bind.Argv)
	}
	for _, x := range inEngineExecs(p, uid, modules, true) {
		if !slices.Contains(x.Argv, "--"+smoke.FlagEmulated) {
			t.Errorf("%s: an emulated run's client is not told so: %q", x.Where, x.Argv)
		}
	}
}
