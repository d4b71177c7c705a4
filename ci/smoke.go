package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func init() {
	register(&command{
		name:    smoke.ClientCommand,
		summary: "Run an image from a registry in runc and check it (table of named checks)",
		usage:   "--image REF [flags] | --address HOST [flags] [--start -- COMMAND...]",
		long:    smokeHelp,
		flags: func(fs *flag.FlagSet) runFunc {
			ref := fs.String("image", "", "image `REF` to test (tag or digest)")
			expectLock := fs.String("expect-lock", "", "lock `file` whose nginx, OpenSSL and PCRE2 versions the image must have (default: the versions the image records; not compared when it records none)")
			modules := fs.String("modules", "", "comma-separated nginx `modules` the image was built with, as for build --modules (default: the modules the image records, else the default set; \"any\" to skip the comparison)")
			insecure := fs.Bool("insecure", false, "allow a plain-HTTP registry (loopback registries already are)")
			confD := fs.String("conf-d", "", "mount `DIR` read-only at /etc/nginx/conf.d")
			noTLS := fs.Bool("no-tls", false, "do not mount a certificate (the TLS checks are skipped)")
			timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
			verbose := fs.Bool("v", false, "print each step and check as it runs")
			addr := fs.String(smoke.FlagAddress, "", "run against the server at `HOST` over the network instead of an image")
			tlsCA := fs.String(smoke.FlagTLSCA, "", "with --address: the server's certificate `file` (PEM) to trust; without it the TLS checks are skipped")
			serverName := fs.String(smoke.FlagServerName, "localhost", "with --address: the TLS server `name` to ask for and verify")
			uid := fs.Int(smoke.FlagUID, 0, "with --start: the `uid` every server process must run as (default 65532)")
			httpPort := fs.Int(smoke.FlagHTTPPort, 0, "with --address: the HTTP `port` (default 8080)")
			httpsPort := fs.Int(smoke.FlagHTTPSPort, 0, "with --address: the HTTPS and QUIC `port` (default 8443)")
			start := fs.Bool(smoke.FlagStart, false, "with --address: start the command after -- (the image's entrypoint) and observe it too")
			watchRoot := fs.String(smoke.FlagWatchRoot, "/", "with --start: the `directory` whose filesystem must not change while the server runs")
			asJSON := fs.Bool(smoke.FlagJSON, false, "print the report as JSON")
			expectModules := fs.String(smoke.FlagExpectModules, "", "with --address: the configure `flags` the server was built with, comma-separated (what build expects; instead of --modules)")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				req := forge.SmokeRequest{Image: *ref, Insecure: *insecure, Address: *addr, WatchRoot: *watchRoot,
					TLSCAFile: *tlsCA, ServerName: *serverName, UID: *uid, HTTPPort: *httpPort, HTTPSPort: *httpsPort,
					ExpectLock: *expectLock, Modules: *modules}
				if *expectModules != "" {
					req.ExpectFlags = splitList(*expectModules)
				}
				switch {
				case *start && *addr != "" && len(args) == 0:
					return usageErrorf("--start needs the command after --")
				case *start && *addr != "":
					req.Start = args
				case len(args) > 0:
					return usageErrorf("unexpected arguments %q (a command to start needs --address and --start)", args)
				}
				// The flags are checked before anything is pulled or contacted.
				if *timeout <= 0 {
					return usageErrorf("--timeout %s must be positive (how long the whole run may take)", *timeout)
				}
				if err := req.Validate(); err != nil {
					return usageErrorf("%v", err)
				}
				var logf func(string, ...any)
				if *verbose {
					logf = log.New(stderr, "smoke: ", log.Ltime).Printf
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				if *addr != "" {
					rep, err := forge.SmokeServer(ctx, req, logf)
					if err != nil {
						return err
					}
					return printSmoke(rep, fmt.Sprintf("server at %s", *addr), *asJSON, stdout)
				}
				return smokeImage(ctx, req, host.SmokeOptions{ConfD: *confD, NoTLS: *noTLS}, logf, *asJSON, stdout)
			}
		},
	})
}

// smokeImage pulls the image once and runs the suite on it in runc on this machine.
func smokeImage(ctx context.Context, req forge.SmokeRequest, o host.SmokeOptions, logf func(string, ...any), asJSON bool, stdout io.Writer) error {
	prep, err := forge.PrepareImageSmoke(ctx, req)
	if err != nil {
		return err
	}
	o.Options = prep.Options
	if logf != nil {
		o.Logf = logf
		logf("expectations from %s", prep.From)
	}
	rep, err := host.SmokeImage(ctx, prep.Image, o)
	if err != nil {
		return err
	}
	return printSmoke(rep, fmt.Sprintf("image %s (%s), expectations from %s", req.Image, prep.Digest, prep.From), asJSON, stdout)
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

const smokeHelp = `Pull REF, unpack it with umoci and run it with runc the way it is meant to run: as its
user (65532), with a read-only root filesystem, tmpfs on /var/cache/nginx, /run/nginx and
/tmp, no capabilities, in its own network namespace (so ports 8080/8443 never clash with
the host's). A fresh ECDSA certificate for localhost, with the tls.conf documented in the
image's own nginx.conf, is mounted at /etc/nginx/tls to turn on HTTPS, HTTP/2 and HTTP/3.

Then every check runs and the table is printed: nginx -t, nginx -V (versions and modules),
HTTP on 8080, TLS 1.3, HTTP/2 and HTTP/3 on 8443, user, read-only root, no shell, and the
binary's hardening (PIE, RELRO, BIND_NOW, canary, NX, fortify) and dynamic needs. The exit
status is 1 when a check failed, naming the failed checks.

What the image must be comes from the image itself: an image built by "ci build" records
the versions of what nginx was built from and its modules (annotations dev.nginx-forge.*),
and nginx -V must match that record. --expect-lock adds a comparison with a lock (nginx,
OpenSSL and PCRE2 versions); --modules replaces the recorded modules. An image that records
nothing (built from the Dockerfile, or elsewhere) is expected to have the default modules.

Needs root, runc and umoci (apt-get install runc umoci).

With --address HOST instead of --image, the suite runs against a server that is already
running at HOST (its ports 8080/8443, or --http-port/--https-port), over the network only:
HTTP, TLS (trusting the certificate --tls-ca), HTTP/2 and HTTP/3 over QUIC. The checks that
need the image's files or processes are skipped as unobservable. With --start, the command
after "--" (the image's entrypoint) is started here first and observed as well: its
processes' users (/proc), its output (the error log), and the files of --watch-root's
filesystem it changes while it runs (the read-only root check, as writes rather than mount
options). This is what the Dagger engine runs inside the engine, from a static build of
this command mounted into containers of the image: one bound to the nginx service, one
starting nginx itself. --json prints the report as JSON.

Examples:
  # The image just pushed to a loopback registry, checked against what it records
  go run ./ci smoke --image 127.0.0.1:5000/nginx-forge/nginx@sha256:...

  # ... and compared with the test lock
  go run ./ci smoke --image 127.0.0.1:5000/nginx-forge/nginx@sha256:... \
      --expect-lock pipeline/lock/testdata/trixie.lock.json

  # Try your server blocks against the image
  go run ./ci smoke --image ghcr.io/nginx-forge/nginx:1.26.2 --conf-d ./sites --modules any

  # A server already running on this machine, as JSON
  go run ./ci smoke --address 127.0.0.1 --tls-ca tls.crt --json`
