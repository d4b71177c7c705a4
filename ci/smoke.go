package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func init() {
	register(&command{
		name:    "smoke",
		summary: "Run an image from a registry in runc and check it (table of named checks)",
		usage:   "--image REF [flags]",
		long: `Pull REF, unpack it with umoci and run it with runc the way it is meant to run: as its
user (65532), with a read-only root filesystem, tmpfs on /var/cache/nginx, /run/nginx and
/tmp, no capabilities, in its own network namespace (so ports 8080/8443 never clash with
the host's). A fresh ECDSA certificate for localhost, with the tls.conf documented in the
image's own nginx.conf, is mounted at /etc/nginx/tls to turn on HTTPS, HTTP/2 and HTTP/3.

Then every check runs and the table is printed: nginx -t, nginx -V (versions and modules),
HTTP on 8080, TLS 1.3, HTTP/2 and HTTP/3 on 8443, user, read-only root, no shell, and the
binary's hardening (PIE, RELRO, BIND_NOW, canary, NX, fortify) and dynamic needs. The exit
status is 1 when a check failed, naming the failed checks.

Needs root, runc and umoci (apt-get install runc umoci).

Examples:
  # The image just pushed to a loopback registry, compared with the test lock
  go run ./ci smoke --image 127.0.0.1:5000/nginx-forge@sha256:... \
      --expect-lock pipeline/lock/testdata/trixie.lock.json

  # Try your server blocks against the image
  go run ./ci smoke --image ghcr.io/nginx-forge/nginx:1.26.2 --conf-d ./sites --modules any`,
		flags: func(fs *flag.FlagSet) runFunc {
			ref := fs.String("image", "", "image `REF` to test (tag or digest)")
			expectLock := fs.String("expect-lock", "", "lock `file` whose nginx, OpenSSL and PCRE2 versions the image must have (default: versions are reported, not compared)")
			modules := fs.String("modules", "", "comma-separated nginx `modules` the image was built with, as for build --modules (default: the default set; \"any\" to skip the comparison)")
			insecure := fs.Bool("insecure", false, "allow a plain-HTTP registry (loopback registries already are)")
			confD := fs.String("conf-d", "", "mount `DIR` read-only at /etc/nginx/conf.d")
			noTLS := fs.Bool("no-tls", false, "do not mount a certificate (the TLS checks are skipped)")
			timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
			verbose := fs.Bool("v", false, "print each step and check as it runs")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if *ref == "" {
					return usageErrorf("--image is required")
				}
				if len(args) > 0 {
					return usageErrorf("unexpected arguments %q", args)
				}
				expect, err := smokeExpect(*expectLock, *modules)
				if err != nil {
					return err
				}
				o := smoke.ImageOptions{
					Options:  smoke.Options{Expect: expect},
					Insecure: *insecure,
					ConfD:    *confD,
					NoTLS:    *noTLS,
				}
				if *verbose {
					o.Logf = log.New(stderr, "smoke: ", log.Ltime).Printf
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				return runSmoke(ctx, *ref, o, stdout)
			}
		},
	})
}

func runSmoke(ctx context.Context, ref string, o smoke.ImageOptions, stdout io.Writer) error {
	rep, digest, err := smoke.Ref(ctx, ref, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "image %s (%s)\n\n", ref, digest)
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
