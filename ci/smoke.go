package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func init() {
	register(&command{
		name:    "smoke",
		summary: "Run an image from a registry (runc here, or a Dagger service) and check it (table of named checks)",
		usage:   "--image REF [--engine host|dagger] [flags] | --address HOST [flags] [--start -- COMMAND...]",
		long:    smokeHelp,
		flags:   smokeFlags,
	})
}

// smokeFlags declares ci smoke's flags; --address and the flags after it have the names of
// the in-engine client's (pipeline/smoke's Flag*), so one argv serves both.
func smokeFlags(fs *flag.FlagSet) runFunc {
	var req forge.SmokeRequest
	fs.StringVar(&req.Image, "image", "", "image `REF` to test: "+image.SourceSpellings)
	eng := hostEngine
	fs.Var(&eng, "engine", "where --image runs: host (runc on this machine, as deployed: read-only root, tmpfs, no capabilities) or dagger (a service on the Dagger engine, as ci build --engine dagger smoke-tests)")
	fs.StringVar(&req.ExpectLock, "expect-lock", "", "lock `file` whose nginx, OpenSSL and PCRE2 versions the image must have (default: the versions the image records; not compared when it records none)")
	fs.StringVar(&req.Modules, "modules", "", "comma-separated nginx `modules` the image was built with, as for build --modules (default: the modules the image records, else the default set; \"any\" to skip the comparison)")
	fs.BoolVar(&req.Insecure, "insecure", false, "allow a plain-HTTP registry (loopback registries already are)")
	confD := fs.String("conf-d", "", "--engine host: mount `DIR` read-only at /etc/nginx/conf.d")
	noTLS := fs.Bool("no-tls", false, "--engine host: do not mount a certificate (the TLS checks are skipped)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	verbose := fs.Bool("v", false, "print each step and check as it runs")
	fs.StringVar(&req.Address, smoke.FlagAddress, "", "run against the server at `HOST` over the network instead of an image")
	fs.StringVar(&req.TLSCAFile, smoke.FlagTLSCA, "", "with --address: the server's certificate `file` (PEM) to trust; without it the TLS checks are skipped")
	fs.StringVar(&req.ServerName, smoke.FlagServerName, "localhost", "with --address: the TLS server `name` to ask for and verify")
	fs.IntVar(&req.UID, smoke.FlagUID, 0, "with --start: the `uid` every server process must run as (default 65532)")
	fs.IntVar(&req.HTTPPort, smoke.FlagHTTPPort, 0, "with --address: the HTTP `port` (default 8080)")
	fs.IntVar(&req.HTTPSPort, smoke.FlagHTTPSPort, 0, "with --address: the HTTPS and QUIC `port` (default 8443)")
	start := fs.Bool(smoke.FlagStart, false, "with --address: start the command after -- (the image's entrypoint) and observe it too")
	fs.StringVar(&req.WatchRoot, smoke.FlagWatchRoot, "/", "with --start: the `directory` whose filesystem must not change while the server runs")
	asJSON := fs.Bool(smoke.FlagJSON, false, "print the report as JSON")
	expectModules := fs.String(smoke.FlagExpectModules, "", "with --address: the configure `flags` the server was built with, comma-separated (what build expects; instead of --modules)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if *expectModules != "" {
			req.ExpectFlags = splitList(*expectModules)
		}
		if *timeout <= 0 {
			return usageErrorf("--timeout %s must be positive (how long the whole run may take)", *timeout)
		}
		rs, err := smokeArgs(req, *start, args, eng, *confD != "" || *noTLS)
		if err != nil {
			return err
		}
		if *confD != "" {
			if err := checkDirFlag("--conf-d", *confD, "of nginx configuration files to mount at /etc/nginx/conf.d"); err != nil {
				return err
			}
		}
		// With -v each step and check is a line of the one progress renderer (ci/log.go, with
		// its redaction), the Dagger engine's own output included; without it, only the table.
		sink, _ := newLog(stderr, *verbose, false)
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		if req.Address != "" {
			rep, err := forge.SmokeServer(ctx, rs, sink)
			if err != nil {
				return err
			}
			return printSmoke(rep, fmt.Sprintf("server at %s", req.Address), *asJSON, stdout)
		}
		e, err := newEngine(engineConfig{name: eng, sink: sink, verbose: *verbose, confD: *confD, noTLS: *noTLS})
		if err != nil {
			return err
		}
		defer e.Close()
		return smokeImage(ctx, rs, e, sink, *asJSON, stdout)
	}
}

// smokeArgs checks the flags and arguments before anything is pulled or contacted, and
// resolves the request once (forge.SmokeRequest.Resolve).
func smokeArgs(req forge.SmokeRequest, start bool, args []string, eng engineName, hostOnly bool) (*forge.ResolvedSmoke, error) {
	switch {
	case start && req.Address != "" && len(args) == 0:
		return nil, usageErrorf("--start needs the command after --")
	case start && req.Address != "":
		req.Start = args
	case len(args) > 0:
		return nil, usageErrorf("unexpected arguments %q (a command to start needs --address and --start)", args)
	}
	if eng == daggerEngine && hostOnly {
		return nil, usageErrorf("--conf-d and --no-tls apply to --engine host: the Dagger engine runs the image as ci build does (its TLS mount, no conf.d)")
	}
	rs, err := req.Resolve()
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return rs, nil
}

// smokeImage pulls the image once and runs the suite on it on the engine --engine chose:
// runc on this machine (host) or a service on the Dagger engine.
func smokeImage(ctx context.Context, rs *forge.ResolvedSmoke, e engine.Engine, sink progress.Sink, asJSON bool, stdout io.Writer) error {
	req := rs.Request()
	prep, err := forge.PrepareImageSmoke(ctx, rs)
	if err != nil {
		return err
	}
	sink.Send(progress.Note{Level: progress.Detail, Text: "expectations from " + prep.From})
	o := prep.Options
	o.Progress = sink
	rep, err := e.Smoke(ctx, prep.Plan, prep.Image, o)
	if err != nil {
		return err
	}
	return printSmoke(rep, fmt.Sprintf("image %s (%s), expectations from %s, run by the %s engine", req.Image, prep.Digest, prep.From, e.Name()), asJSON, stdout)
}

// smokeReport is what a smoke run returns (pipeline/smoke.Report): printed here.
type smokeReport interface {
	WriteJSON(io.Writer) error
	Print(io.Writer) error
	Err() error
}

// printSmoke prints the table (after a title line) or the JSON report, and fails naming
// the failed checks.
func printSmoke(rep smokeReport, title string, asJSON bool, stdout io.Writer) error {
	if asJSON {
		if err := rep.WriteJSON(stdout); err != nil {
			return err
		}
		return rep.Err()
	}
	fmt.Fprintf(stdout, "%s\n\n", title)
	if err := rep.Print(stdout); err != nil {
		return err
	}
	return rep.Err()
}

const smokeHelp = `Pull REF and run it the way it is meant to run, then run every check and print the table.

--engine host (the default) unpacks it with umoci and runs it with runc on this machine: as
its user (65532), with a read-only root filesystem, tmpfs on /var/cache/nginx, /run/nginx and
/tmp, no capabilities, in its own network namespace (so ports 8080/8443 never clash with the
host's). This is the default because it is the image exactly as deployed: the read-only root
is checked as a mount option here, which no Dagger container can give (the Dagger engine
checks it as "no writes while it runs" instead). It needs root, runc and umoci (apt-get
install runc umoci).

--engine dagger runs it where "ci build --engine dagger" smoke-tests it: as a service on the
Dagger engine, checked through the engine's TCP tunnels from here, and from inside the engine
by the smoke client (pipeline/smoke/cmd/smokeclient, which the engine builds from this
checkout's source): HTTP/3 over UDP through a service binding, and the image's processes,
output and writes in a second container of it. No root is needed here. --conf-d and --no-tls
are for --engine host.

Either way a fresh ECDSA certificate for localhost, with the tls.conf documented in the
image's own nginx.conf, is mounted at /etc/nginx/tls to turn on HTTPS, HTTP/2 and HTTP/3.
The checks: nginx -t, nginx -V (versions and modules), HTTP on 8080, TLS 1.3, HTTP/2 and
HTTP/3 on 8443, user, read-only root, no shell, and the binary's hardening (PIE, RELRO,
BIND_NOW, canary, NX, fortify) and dynamic needs. The exit status is 1 when a check failed,
naming the failed checks.

What the image must be comes from the image itself: an image built by "ci build" records
the versions of what nginx was built from and its modules (annotations dev.nginx-forge.*),
and nginx -V must match that record. --expect-lock adds a comparison with a lock (nginx,
OpenSSL and PCRE2 versions); --modules replaces the recorded modules. An image that records
nothing (built from the Dockerfile, or elsewhere) is expected to have the default modules.

With --address HOST instead of --image, the suite runs against a server that is already
running at HOST (its ports 8080/8443, or --http-port/--https-port), over the network only:
HTTP, TLS (trusting the certificate --tls-ca), HTTP/2 and HTTP/3 over QUIC. The checks that
need the image's files or processes are skipped as unobservable. With --start, the command
after "--" (the image's entrypoint) is started here first and observed as well: its
processes' users (/proc), its output (the error log), and the files of --watch-root's
filesystem it changes while it runs (the read-only root check, as writes rather than mount
options). These are the flags of the Dagger engine's in-engine smoke client too, which runs
the same suite in containers of the image. --json prints the report as JSON.

Examples:
  # The image just pushed to a loopback registry, checked against what it records
  go run ./ci smoke --image 127.0.0.1:5000/nginx-forge/nginx@sha256:...

  # ... and compared with the test lock
  go run ./ci smoke --image 127.0.0.1:5000/nginx-forge/nginx@sha256:... \
      --expect-lock pipeline/lock/testdata/stack.twin.lock.json

  # Try your server blocks against the image
  go run ./ci smoke --image ghcr.io/nginx-forge/nginx:1.30.6 --conf-d ./sites --modules any

  # The same digest as a service on the Dagger engine, as ci build smoke-tests it
  go run ./ci smoke --engine dagger --image 127.0.0.1:5000/nginx-forge/nginx@sha256:...

  # A server already running on this machine, as JSON
  go run ./ci smoke --address 127.0.0.1 --tls-ca tls.crt --json`
