package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/actions"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

func init() {
	register(&command{
		name:    "check-updates",
		summary: "look for new upstream releases and base image digests (--write updates the lock)",
		usage:   "[--write] [--lock FILE] [flags]",
		long: `
Reads the releases of nginx, OpenSSL, PCRE2 and zlib, and of the optional components the lock
has (brotli, ngx_brotli, zstd, the zstd module), from GitHub (nginx.org's download page
when GitHub fails for nginx), applies each component's track from the lock (nginx: a stable
branch like "1.26" or "stable"; OpenSSL: a branch like "3.5" or "lts"; others "latest"),
warns about end-of-life branches, and looks up the digests the builder and runtime image tags
point at now. It prints a table and exits 0 whether or not something is new.

With --write, each new release is downloaded with its signature and the lock is rewritten
with the new version and SHA-256 together, and with the new base image index digests. A new
release is refused when its signature cannot be verified against the fingerprints pinned in
the lock, when its signer's key is not vendored (pipeline/lock/keys: add it in a reviewed
change), when its signature is older than the locked release's (the locked release is
verified again to learn that date), or when its tarball's top directory is not
<name>-<version>/; a base image is refused when its index lacks linux/amd64 or linux/arm64.
A component the lock marks "unsigned" gains a signature when upstream publishes one for the
new release (and loses its "unsigned" reason). On any refusal the lock is left byte-for-byte
as it was and the command exits 1. --pr-body FILE writes, when the lock was rewritten, the
Markdown that lists what was verified for each change (the update pull request's body).

A GitHub token raises the API rate limit; it is read from the environment variable named by
--github-token-env (never from a flag, never printed). In GitHub Actions the results also go
to step outputs (changed, <component>_version, updates, title, summary), the step summary and
warning annotations.`,
		flags: func(fs *flag.FlagSet) runFunc {
			write := fs.Bool("write", false, "download, verify and write new releases and image digests into the lock")
			lockFile := fs.String("lock", lock.DefaultPath, "lock `file` to check (and rewrite with --write)")
			ghAPI := fs.String("github-api", upstream.DefaultGitHubAPI, "GitHub REST API root `URL`")
			nginxOrg := fs.String("nginx-org", upstream.DefaultNginxOrg, "nginx.org root `URL` (fallback release list for nginx)")
			mirror := fs.String("mirror", "", "fetch new tarballs, signatures and keys from this mirror `URL` instead of upstream (checks are the same)")
			registry := fs.String("registry", "", "look up the base images on this registry `host` instead of their own (e.g. 127.0.0.1:5000)")
			skipImages := fs.Bool("skip-images", false, "do not look up base image digests")
			tokenEnv := fs.String("github-token-env", "GITHUB_TOKEN", "environment `variable` holding an optional GitHub token")
			keyserver := fs.String("keyserver", "", "fetch signer keys that are not vendored from these comma-separated `URLs` (default keyserver.ubuntu.com, then keys.openpgp.org)")
			cacheDir := fs.String("cache", "", "source cache `dir` (default ~/.cache/nginx-forge/sources)")
			prBody := fs.String("pr-body", "", "with --write, when the lock changed, write the update pull request's Markdown body (what was verified for each change) to `file`")
			verbose := fs.Bool("v", false, "print each request and decision")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) > 0 {
					return usageErrorf("check-updates takes no arguments, got %q", args)
				}
				for _, f := range []struct{ name, val string }{{"--github-api", *ghAPI}, {"--nginx-org", *nginxOrg}, {"--mirror", *mirror}} {
					if f.val == "" && f.name == "--mirror" {
						continue
					}
					if u, err := url.Parse(f.val); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
						return usageErrorf("%s %q is not an http(s) URL", f.name, f.val)
					}
				}
				if strings.ContainsAny(*registry, "/ ") {
					return usageErrorf("--registry %q must be a host[:port], like 127.0.0.1:5000", *registry)
				}
				if *prBody != "" && !*write {
					return usageErrorf("--pr-body needs --write (the body lists what --write verified)")
				}
				return checkUpdates(ctx, stdout, stderr, checkUpdatesConfig{
					write: *write, prBody: *prBody, lockFile: *lockFile, githubAPI: *ghAPI, nginxOrg: *nginxOrg,
					mirror: *mirror, registry: *registry, skipImages: *skipImages,
					token: os.Getenv(*tokenEnv), cacheDir: *cacheDir, verbose: *verbose,
					keyservers: splitList(*keyserver),
				})
			}
		},
	})
}

type checkUpdatesConfig struct {
	write                       bool
	prBody                      string
	lockFile                    string
	githubAPI, nginxOrg, mirror string
	registry                    string
	skipImages                  bool
	token                       string
	cacheDir                    string
	keyservers                  []string
	verbose                     bool
}

// testVendoredKeys, when not nil, replaces the keys vendored in pipeline/lock/keys as the
// signers a new release may be signed by. Only tests set it: they sign their stand-in
// releases with generated keys, and the vendored keys' private halves are upstream's.
var testVendoredKeys []string

func checkUpdates(ctx context.Context, stdout, stderr io.Writer, cfg checkUpdatesConfig) error {
	rep := actions.New(actions.WithWriter(stdout))
	rep.Mask(cfg.token)
	logf := func(string, ...any) {}
	// In Actions the detail goes into collapsed log groups, where it costs nothing and helps
	// when a scheduled run fails; on a terminal it waits for -v.
	if cfg.verbose || rep.InActions() {
		logf = rep.Logf
	}
	l, err := lock.Load(cfg.lockFile)
	if err != nil {
		return err
	}

	clientOpts := []upstream.ClientOption{upstream.WithGitHubAPI(cfg.githubAPI), upstream.WithNginxOrg(cfg.nginxOrg), upstream.WithLogf(logf)}
	if cfg.token != "" {
		clientOpts = append(clientOpts, upstream.WithToken(cfg.token))
	}
	checker := &upstream.Checker{Releases: upstream.NewClient(clientOpts...), Logf: logf}
	if !cfg.skipImages {
		var imgOpts []upstream.ImageOption
		if cfg.registry != "" {
			imgOpts = append(imgOpts, upstream.WithRegistry(cfg.registry))
		}
		checker.Images = upstream.NewImageResolver(imgOpts...)
	}

	var report *upstream.Report
	checkErr := rep.Group("Looking up upstream releases and base images", func() error {
		var err error
		report, err = checker.Check(ctx, l)
		return err
	})
	for _, w := range report.Warnings {
		rep.Warningf("%s", w)
	}

	var applied []upstream.Applied
	var writeErr error
	if cfg.write && checkErr == nil && report.Changed() {
		writeErr = rep.Group("Downloading and verifying new releases", func() error {
			u := &upstream.Updater{
				Fetcher:  upstream.NewFetcher(upstream.FetchConfig{Mirror: cfg.mirror, CacheDir: cfg.cacheDir, Logf: logf, Keyservers: cfg.keyservers}),
				Images:   checker.Images,
				Vendored: testVendoredKeys,
				Mirror:   cfg.mirror,
				Logf:     logf,
			}
			var err error
			applied, err = u.UpdateFile(ctx, cfg.lockFile, report)
			return err
		})
	}

	rows, outputs := updateRows(report)
	written := cfg.write && writeErr == nil && checkErr == nil && len(applied) > 0
	outputs["written"] = fmt.Sprint(written)
	for _, a := range applied {
		if a.SHA256 != "" && !a.Signed {
			rep.Warningf("%s %s has no signature pinned in the lock: its checksum rests on the HTTPS download alone; review it", a.Name, a.New)
		}
		if a.DroppedProfile != "" {
			rep.Warningf("the recorded PGO profile for %s was removed from the lock (trained on the sources or builder this update replaces): record a new one with go run ./ci pgo-profile --url BASE --write", a.DroppedProfile)
		}
	}
	if err := rep.UpdateSummary("Upstream updates ("+cfg.lockFile+")", rows); err != nil {
		return err
	}
	if err := rep.SetOutputs(outputs); err != nil {
		return err
	}
	if written && cfg.prBody != "" {
		body := upstream.PRBody(applied, report.Warnings) + "\n" + outputs["summary"]
		if err := os.WriteFile(cfg.prBody, []byte(body), 0o644); err != nil {
			return fmt.Errorf("writing the pull request body %q (the lock %s was updated): %w", cfg.prBody, cfg.lockFile, err)
		}
	}

	switch {
	case checkErr != nil:
		rep.Errorf("%s", strings.ReplaceAll(checkErr.Error(), "\n", "; "))
		return fmt.Errorf("checking for updates (the lock is unchanged): %w", checkErr)
	case writeErr != nil:
		rep.Errorf("%s", strings.ReplaceAll(writeErr.Error(), "\n", "; "))
		return fmt.Errorf("updating %s (it is unchanged): %w", cfg.lockFile, writeErr)
	case written:
		fmt.Fprintf(rep.Writer(), "updated %s:\n", cfg.lockFile)
		for _, a := range applied {
			how := ""
			switch {
			case a.IsImage():
				how = " (index: " + strings.Join(a.Platforms, ", ") + ")"
			case a.Signed:
				how = " (sha256 " + a.SHA256 + ", signed by " + a.SignedBy + ", top directory " + a.TopDir + "/)"
			default:
				how = " (sha256 " + a.SHA256 + ", checksum only, top directory " + a.TopDir + "/)"
			}
			fmt.Fprintf(rep.Writer(), "  %s: %s -> %s%s\n", a.Name, orNone(a.Old), a.New, how)
		}
	case report.Changed() && !cfg.write:
		fmt.Fprintf(rep.Writer(), "updates are available: run with --write to verify them and update %s\n", cfg.lockFile)
	case !report.Changed():
		fmt.Fprintln(rep.Writer(), "everything is up to date")
	}
	return nil
}

// updateRows turns the report into summary rows and step outputs.
func updateRows(r *upstream.Report) ([]actions.Row, map[string]string) {
	out := map[string]string{"changed": fmt.Sprint(r.Changed())}
	var rows []actions.Row
	var updates, title []string
	for _, c := range r.Components {
		rows = append(rows, actions.Row{Component: c.Name, Old: c.Current, New: c.Latest, EOL: c.EOL})
		v := c.Current
		if c.Update {
			v = c.Latest
			updates = append(updates, fmt.Sprintf("%s %s -> %s", c.Name, c.Current, c.Latest))
			title = append(title, c.Name+" "+c.Latest)
		}
		out[c.Name+"_version"] = v
	}
	for _, i := range r.Images {
		rows = append(rows, actions.Row{Component: i.Role + " image " + i.Ref, Old: i.Current, New: i.Latest})
		if i.Update {
			updates = append(updates, fmt.Sprintf("%s image %s -> %s", i.Role, orNone(i.Current), i.Latest))
			title = append(title, i.Role+" image digest")
		}
		out[i.Role+"_digest"] = i.Latest
	}
	out["updates"] = strings.Join(updates, "\n")
	if len(title) > 0 {
		out["title"] = "Update " + strings.Join(title, ", ")
	} else {
		out["title"] = ""
	}
	out["summary"] = actions.UpdateTableMarkdown("Upstream updates", rows)
	return rows, out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
