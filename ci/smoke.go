package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func init() {
	register(&command{
		name:    "smoke",
		summary: "Run an image from a registry in runc and check it (table of named checks)",
		usage:   "--image REF [flags] | --address HOST [flags] [--start -- COMMAND...]",
		long: `Pull REF, unpack it with umoci and run it with runc the way it is meant to run: as its
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
  go run ./ci smoke --address 127.0.0.1 --tls-ca tls.crt --json`,
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
			serverName := fs.String(smoke.FlagServerName, smoke.DefaultServerName, "with --address: the TLS server `name` to ask for and verify")
			uid := fs.Int(smoke.FlagUID, 0, "with --start: the `uid` every server process must run as (default 65532)")
			httpPort := fs.Int(smoke.FlagHTTPPort, 0, "with --address: the HTTP `port` (default 8080)")
			httpsPort := fs.Int(smoke.FlagHTTPSPort, 0, "with --address: the HTTPS and QUIC `port` (default 8443)")
			start := fs.Bool(smoke.FlagStart, false, "with --address: start the command after -- (the image's entrypoint) and observe it too")
			watchRoot := fs.String(smoke.FlagWatchRoot, "/", "with --start: the `directory` whose filesystem must not change while the server runs")
			asJSON := fs.Bool(smoke.FlagJSON, false, "print the report as JSON")
			expectModules := fs.String(smoke.FlagExpectModules, "", "with --address: the configure `flags` the server was built with, comma-separated (what build expects; instead of --modules)")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if *addr != "" {
					if *ref != "" {
						return usageErrorf("--image and --address exclude each other")
					}
					req := smoke.ClientRequest{Address: *addr, WatchRoot: *watchRoot}
					if *start {
						if len(args) == 0 {
							return usageErrorf("--start needs the command after --")
						}
						req.Start = args
					} else if len(args) > 0 {
						return usageErrorf("unexpected arguments %q (a command to start needs --start)", args)
					}
					expect, err := smokeExpect(*expectLock, *modules)
					if err != nil {
						return err
					}
					if *expectModules != "" {
						expect.Modules = splitList(*expectModules)
					}
					o := smoke.Options{Expect: expect, UID: *uid, HTTPPort: *httpPort, HTTPSPort: *httpsPort}
					if *tlsCA != "" {
						pemBytes, err := os.ReadFile(*tlsCA)
						if err != nil {
							return usageErrorf("--%s: %v", smoke.FlagTLSCA, err)
						}
						if o.TLS, err = smoke.TrustTLS(pemBytes, *serverName); err != nil {
							return usageErrorf("--%s %s: %v", smoke.FlagTLSCA, *tlsCA, err)
						}
					}
					if *verbose {
						o.Logf = log.New(stderr, "smoke: ", log.Ltime).Printf
					}
					ctx, cancel := context.WithTimeout(ctx, *timeout)
					defer cancel()
					rep, err := smoke.RunClient(ctx, req, o)
					if err != nil {
						return err
					}
					return printSmoke(rep, fmt.Sprintf("server at %s", *addr), *asJSON, stdout)
				}
				if *ref == "" {
					return usageErrorf("--image is required")
				}
				if len(args) > 0 {
					return usageErrorf("unexpected arguments %q", args)
				}
				// The flags are checked before anything is pulled.
				flagExpect, err := smokeExpect(*expectLock, *modules)
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				img, err := pullImage(ctx, *ref, *insecure)
				if err != nil {
					return err
				}
				expect, from, err := imageExpect(img, flagExpect, *expectLock, *modules)
				if err != nil {
					return err
				}
				o := host.SmokeOptions{
					Options: smoke.Options{Expect: expect},
					ConfD:   *confD,
					NoTLS:   *noTLS,
				}
				if *verbose {
					o.Logf = log.New(stderr, "smoke: ", log.Ltime).Printf
					o.Logf("expectations from %s", from)
				}
				rep, err := host.SmokeImage(ctx, img, o)
				if err != nil {
					return err
				}
				digest, err := img.Digest()
				if err != nil {
					return err
				}
				return printSmoke(rep, fmt.Sprintf("image %s (%s), expectations from %s", *ref, digest, from), *asJSON, stdout)
			}
		},
	})
}

// pullImage fetches ref (tag or digest) once: the expectations are read from exactly the
// image that is then run.
func pullImage(ctx context.Context, ref string, insecure bool) (v1.Image, error) {
	var nopts []name.Option
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return nil, usageErrorf("--image %q: parsing reference: %v", ref, err)
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(image.Keychain()))
	if err != nil {
		return nil, fmt.Errorf("pulling image %s: %w", ref, err)
	}
	return img, nil
}

// imageExpect builds what the image must be, and says where that came from. The image's
// own record (its annotations: component versions, modules) comes first: an image is
// checked against what it was built as, whatever lock or --modules built it. --expect-lock
// adds a comparison with a lock (its nginx, OpenSSL and PCRE2 versions replace the
// recorded ones, so nginx -V must match the lock); --modules replaces the recorded modules
// ("any": not compared). An image without a record (built by the Dockerfile, or elsewhere)
// is checked as before: flagExpect (smokeExpect of the same flags), the lock's default
// modules, versions only with --expect-lock.
func imageExpect(img v1.Image, flagExpect smoke.Expect, lockFile, modules string) (smoke.Expect, string, error) {
	rec, ok, err := image.ReadRecord(img)
	if err != nil {
		return smoke.Expect{}, "", err
	}
	if !ok {
		from := "the default module set (the image records no build)"
		if lockFile != "" {
			from = lockFile + " (the image records no build)"
		}
		return flagExpect, from, nil
	}
	e, err := forge.ExpectRecorded(rec)
	if err != nil {
		return smoke.Expect{}, "", fmt.Errorf("--image: %w", err)
	}
	from := "the image's record"
	if lockFile != "" {
		e.Nginx, e.OpenSSL, e.PCRE2 = flagExpect.Nginx, flagExpect.OpenSSL, flagExpect.PCRE2
		from += ", versions compared with " + lockFile
	}
	if modules != "" {
		e.Modules = flagExpect.Modules
		from += ", modules from --modules"
	}
	return e, from, nil
}

// printSmoke prints the table (after a title line) or the JSON report, and fails naming
// the failed checks.
func printSmoke(rep smoke.Report, title string, asJSON bool, stdout io.Writer) error {
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

// smokeExpect builds the expectations from a lock file (versions, when given) and a module
// list, as build does from its lock and plan.
func smokeExpect(lockFile, modules string) (smoke.Expect, error) {
	l := lock.Default()
	if lockFile != "" {
		var err error
		if l, err = lock.Load(lockFile); err != nil {
			return smoke.Expect{}, usageErrorf("--expect-lock: loading %s: %v", lockFile, err)
		}
		for _, name := range []string{lock.Nginx, lock.OpenSSL, lock.PCRE2} {
			if _, ok := l.Component(name); !ok {
				return smoke.Expect{}, usageErrorf("--expect-lock: %s has no %s component", lockFile, name)
			}
		}
	}
	var mods []string
	if modules != "" && modules != "any" {
		mods = splitList(modules)
	}
	e, err := forge.Expect(l, mods)
	if err != nil {
		return smoke.Expect{}, usageErrorf("--modules: %v", err)
	}
	if lockFile == "" {
		// Without a lock the versions are reported, not compared.
		e.Nginx, e.OpenSSL, e.PCRE2 = "", "", ""
	}
	if modules == "any" {
		e.Modules = nil
	}
	return e, nil
}
