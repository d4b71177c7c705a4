// Command smokeclient is the smoke client the Dagger engine runs inside the engine, in
// containers of the image under test (pipeline/engine/daggerexec): pipeline/smoke's suite
// against a server reached over the engine's network (HTTP/3 over UDP included, which the
// engine's host tunnels cannot carry), or against the image's entrypoint it starts and
// observes itself; the report is printed as JSON. Its argv is smoke.ClientRequest.Args.
//
// It is a main of its own, importing pipeline/smoke and nothing of `ci`, so that the
// engine builds it from the source of the smoke suite alone (plan.SmokeClientStep) and keeps
// it cached while the command line changes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := smoke.ClientMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
