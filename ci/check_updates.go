package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/actions"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// defaultCheckTimeout bounds a scheduled run against an upstream that accepts connections but
// never answers: lookups run in parallel under it, and a --write run's downloads (a few
// small signatures and tarballs of tens of MB) fit well inside it on a runner.
const defaultCheckTimeout = 100 * time.Second

// checkUpdatesHelp is check-updates' long help.
const checkUpdatesHelp = `
Reads the releases of nginx, the lock's TLS library (OpenSSL or AWS-LC), PCRE2 and its zlib
(zlib or zlib-ng), and of the optional components the lock has (brotli, ngx_brotli, zstd, the
zstd module), from GitHub (nginx.org's download page when GitHub fails for nginx), applies
each component's track from the lock (nginx: a stable branch like "1.30" or "stable";
OpenSSL: a branch like "3.5" or "lts"; others "latest"), warns about end-of-life branches,
and looks up the digests the builder and runtime image tags point at now. For a component
pinned by git commit (AWS-LC, zlib-ng, a git-pinned nginx), the new release's tag is resolved
to its commit and that commit's tree with GitHub's git database API. It prints a table and
exits 0 whether or not something is new.

With --write, each component and base image is decided on its own: a new release is
downloaded with its signature and written into the lock (version and SHA-256 together) when
its signature verifies against a fingerprint the lock pins, is not older than the locked
release's (which is verified again to learn that date), and its tarball's top directory is
<name>-<version>/; a base image's new index digest when the index covers linux/amd64 and
linux/arm64; a git-pinned component's new commit when the commit, fetched with git (or its
archive from --mirror), has exactly the tree GitHub reports (version, tag, commit and tree are
written together; the lock's "unsigned" reason keeps its words with the locked tag and
version replaced by the new ones). A release that the rest of the lock rules out (an AWS-LC
lock needs nginx 1.29.2 or later) is refused before anything is fetched. When the pinned
signer's key is not vendored yet, it is fetched (--keyserver),
its fingerprint and self-signatures checked, and written as keys/<FPR>.asc beside the lock
(--keys) in the same change. A component the lock marks "unsigned" gains a signature when
upstream publishes one for the new release. What is refused is listed with its reason and
the command that resolves it (a release signed by an unpinned key: ci lock trust), and the
rest is still written. Exit status: 0 all done, 3 partial (written and refused), 1 nothing
written (refused or a lookup failed), 2 usage, 4 all done but a pinned version (after the
updates) stays affected by a high or critical advisory with no fixed release on its
component's track (each is a line on standard error and in the summary: choose another track
or accept it).

Advisories (--advisories, the reviewed snapshot pipeline/advisory/advisories.json): an
update that fixes an advisory is a security update: the title ends "(security: CVE-...)",
the pull request body lists each CVE with severity and link, and the step outputs
security=true and security_advisories=<IDs> let the workflow label it "security". The
snapshot is refreshed from the feeds (--nginx-advisories, --openssl-advisories; not with
--skip-advisory-feeds), read alongside the lookups, each answer bounded: with --write a
changed snapshot is written to --advisories and listed in the pull request body (outputs
advisories_written, advisories_changes); a feed that fails leaves the snapshot unchanged, the
lock's updates still done, and is exit status 3. All lookups run in parallel under one
--timeout for the whole run. --pr-body FILE writes, when the lock was rewritten, the Markdown
that lists what was verified for each change, the new keys to review and what was refused
(the update pull request's body).

A GitHub token raises the API rate limit; it is read from the environment variable named by
--github-token-env (never from a flag, never printed). In GitHub Actions the results also go
to step outputs (changed, <component>_version, updates, title, summary), the step summary and
warning annotations.`

func init() {
	register(&command{
		name:    "check-updates",
		summary: "look for new upstream releases and base image digests (--write updates the lock)",
		usage:   "[--write] [--lock FILE] [flags]",
		long:    checkUpdatesHelp,
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
			keysDir := fs.String("keys", "", "reviewed signer keys `dir`: trusted like the vendored keys, and where a pinned signer's key is vendored (default: keys/ beside --lock)")
			timeout := fs.Duration("timeout", defaultCheckTimeout, "one `deadline` for the whole run (lookups, downloads, key fetches): an upstream that never answers fails the run after this long")
			verbose := fs.Bool("v", false, "print each request and decision")
			nginxAdv := fs.String("nginx-advisories", upstream.DefaultNginxAdvisories, "nginx's advisory feed `URL` (nginx.org's security_advisories.xml)")
			opensslAdv := fs.String("openssl-advisories", upstream.DefaultOpenSSLAdvisories, "OpenSSL's advisory feed `URL` (GitHub's contents listing of openssl/release-metadata secjson/; each record from its download_url)")
			skipFeeds := fs.Bool("skip-advisory-feeds", false, "do not read the advisory feeds: classify by the snapshot as it is")
			advisories := fs.String("advisories", upstream.DefaultAdvisories, "the reviewed advisories snapshot `file` the updates are classified by (security updates; advisories with no fix on the track: exit status 4); outside a checkout, the copy built into this program")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if err := noArgs("check-updates", args); err != nil {
					return err
				}
				for _, f := range []struct{ name, val string }{{"--github-api", *ghAPI}, {"--nginx-org", *nginxOrg}, {"--mirror", *mirror}, {"--nginx-advisories", *nginxAdv}, {"--openssl-advisories", *opensslAdv}} {
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
				if *timeout <= 0 {
					return usageErrorf("--timeout %s must be positive", *timeout)
				}
				run := upstream.Run{
					LockFile: *lockFile, Write: *write, KeysDir: *keysDir, Mirror: *mirror, CacheDir: *cacheDir,
					Keyservers: splitList(*keyserver), GitHubAPI: *ghAPI, NginxOrg: *nginxOrg, Token: os.Getenv(*tokenEnv),
					Registry: *registry, SkipImages: *skipImages, Timeout: *timeout, Advisories: *advisories,
					NginxAdvisories: *nginxAdv, OpenSSLAdvisories: *opensslAdv, SkipAdvisoryFeeds: *skipFeeds,
					Platforms: supportedPlatformNames(),
				}
				if err := checkUpdateOutputs(&run, *prBody); err != nil {
					return err
				}
				if err := checkUpdateCache(*write, *cacheDir); err != nil {
					return err
				}
				return checkUpdates(ctx, stdout, stderr, checkUpdatesConfig{prBody: *prBody, verbose: *verbose, secrets: knownSecrets(fs), run: run})
			}
		},
	})
}

// checkUpdateCache refuses, before anything is looked up, a --write whose source cache
// cannot be used (a file, a directory this user cannot write, no HOME to find the default
// in): each download would fail the same way, and the refusal would read like a failed
// release.
func checkUpdateCache(write bool, dir string) error {
	if !write {
		return nil
	}
	flag := "--cache " + dir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return usageErrorf("--write keeps downloads in a source cache, and the default one cannot be found: %v: set XDG_CACHE_HOME or HOME, or give --cache DIR", err)
		}
		dir, flag = filepath.Join(base, "nginx-forge", "sources"), "the default source cache "+filepath.Join(base, "nginx-forge", "sources")
	}
	// The nearest part of dir that exists must be a directory this user may write in: the
	// cache creates the rest.
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) && filepath.Dir(p) != p:
			continue
		case err != nil:
			return usageErrorf("%s: %v: give --cache a directory this user can write", flag, err)
		case !fi.IsDir():
			return usageErrorf("%s: %s is not a directory: give --cache a directory this user can write", flag, p)
		case syscall.Access(p, 0o2|0o1) != nil: // W_OK|X_OK, as this user
			return usageErrorf("%s: %s is not writable by this user: give --cache a directory this user can write", flag, p)
		}
		return nil
	}
}

type checkUpdatesConfig struct {
	run     upstream.Run
	prBody  string
	verbose bool
	// secrets are the run's credentials besides the token (knownSecrets): text a server
	// echoed may quote them.
	secrets []string
}

// testVendoredKeys, when not nil, replaces the keys vendored in pipeline/lock/keys as the
// signers a new release may be signed by. Only tests set it: they sign their stand-in
// releases with generated keys, and the vendored keys' private halves are upstream's.
var testVendoredKeys []string

// exitPartial is check-updates' exit status when it wrote some updates and refused others:
// the update workflow still opens the pull request with what landed, then fails visibly.
const exitPartial = 3

// exitUnfixed is check-updates' exit status when everything asked for was done but a pinned
// version (after this run's updates) stays affected by a high or critical advisory with no
// fixed release on its component's track: no update can fix that, so it is not buried in
// the table; a person chooses another track or accepts it.
const exitUnfixed = 4

// checkUpdates runs the update flow (pipeline/upstream.Run) and renders its outcome: the
// table, the Actions step outputs, summary and annotations, and the pull request body.
func checkUpdates(ctx context.Context, stdout, stderr io.Writer, cfg checkUpdatesConfig) error {
	rep := actions.New(actions.WithWriter(stdout))
	// Everything the reporter prints or writes (lines, annotations, outputs, the summary)
	// goes through the one redaction rule with these.
	rep.Mask(cfg.run.Token)
	for _, s := range cfg.secrets {
		rep.Mask(s)
	}
	run := cfg.run
	// In Actions the detail goes into collapsed log groups, where it costs nothing and helps
	// when a scheduled run fails; on a terminal it waits for -v.
	// The lookups' lines are Detail notes, rendered by the one renderer (log.go) on the
	// reporter's stream, through the reporter's redaction (the token and cfg.secrets) on top
	// of the renderer's own.
	if cfg.verbose || rep.InActions() {
		run.Sink, _ = newLog(redactingWriter{rep.Writer(), append([]string{cfg.run.Token}, cfg.secrets...)}, true, false)
	}
	run.Step = rep.Group
	run.Vendored = testVendoredKeys
	o, err := run.Do(ctx)
	if err != nil {
		// Do fails only on a lock that cannot be read: the same usage error (exit 2) as in
		// every other command, and nothing was written.
		return usageErrorf("%v", err)
	}
	for _, w := range o.Report.Warnings {
		rep.Warningf("%s", w)
	}
	if err := reportUpdates(ctx, rep, cfg, o); err != nil {
		return err
	}
	// A server that could not be reached is one line, whatever the number of components
	// that needed it; every other refusal one line, with its fix. They are the error the
	// command ends with (standard error); in Actions each is also an error annotation.
	var lines []string
	if o.WriteErr != nil {
		lines = append(lines, strings.ReplaceAll(o.WriteErr.Error(), "\n", "; "))
	}
	hosts, rest := run.GroupUnreachable(o.Refused)
	for _, h := range hosts {
		lines = append(lines, h.String())
	}
	for _, r := range rest {
		lines = append(lines, fmt.Sprintf("refused %s; to resolve: %s", strings.ReplaceAll(r.Error(), "\n", "; "), r.Fix))
	}
	feeds := feedLines(o.Advisories)
	lines = append(lines, feeds...)
	if rep.InActions() {
		for _, l := range lines {
			rep.Errorf("%s", l)
		}
	}
	err = o.Err(&run)
	if err == nil && len(feeds) > 0 {
		// The lock's updates are done (or there were none); the snapshot is not refreshed:
		// a partial failure, handed on like one by update.yml, whose refused job names it.
		what := "the lock's updates were written to " + run.LockFile
		if !o.Written {
			what = run.LockFile + " needed no update written"
		}
		return &exitError{code: exitPartial, err: fmt.Errorf("the advisories snapshot was not refreshed (it is unchanged; %s):\n%s", what, strings.Join(feeds, "\n"))}
	}
	if err == nil {
		return unfixedError(o.Security)
	}
	err = &shownError{err: err, text: outcomeSummary(o, &run) + ":\n" + strings.Join(lines, "\n")}
	if errors.As(err, new(*upstream.PartialError)) {
		return &exitError{code: exitPartial, err: err}
	}
	return err
}

// shownError is an Outcome's error as the command words it: each unreachable server once,
// each other refusal with its fix (the Outcome's own error would name a server once per
// component).
type shownError struct {
	err  error
	text string
}

func (e *shownError) Error() string { return e.text }
func (e *shownError) Unwrap() error { return e.err }

// outcomeSummary is the first line of check-updates' error: what became of the lock.
func outcomeSummary(o *upstream.Outcome, run *upstream.Run) string {
	n := len(o.Refused)
	switch {
	case o.WriteErr != nil:
		return fmt.Sprintf("updating %s failed; it is unchanged", run.LockFile)
	case n > 0 && o.Written:
		return fmt.Sprintf("refused %d; the other updates were written to %s", n, run.LockFile)
	case n > 0 && run.Write:
		return fmt.Sprintf("refused %d; %s is unchanged", n, run.LockFile)
	}
	return fmt.Sprintf("checking for updates: %d lookups failed", n)
}

// reportUpdates writes the summary, step outputs, the pull request body and the lines that
// say what was written.
func reportUpdates(ctx context.Context, rep *actions.Reporter, cfg checkUpdatesConfig, o *upstream.Outcome) error {
	report, applied, refused, written := o.Report, o.Applied, o.Refused, o.Written
	lockFile, write := cfg.run.LockFile, cfg.run.Write
	rows, outputs := updateRows(report)
	rows = advisoryOutputs(o.Advisories, rows, outputs)
	securityOutputs(rep, o.Security, outputs)
	outputs["written"] = fmt.Sprint(written)
	var names []string
	for _, r := range refused {
		names = append(names, r.Name)
	}
	if a := o.Advisories; a != nil && (len(a.Failed) > 0 || a.WriteErr != nil) {
		// The refused job of update.yml turns the run red for it, naming it.
		names = append(names, "advisories snapshot (not refreshed)")
	}
	outputs["refused"] = strings.Join(names, ", ")
	var keys []string
	for _, a := range applied {
		if a.Git != nil {
			rep.Warningf("%s %s is pinned by git commit %s (tree %s) and has no signature: review the tag's commit", a.Name, a.New, a.Git.Commit, a.Git.Tree)
			if a.UnsignedWas != "" {
				rep.Warningf("%s %s: the lock's \"unsigned\" reason was rewritten for the new pin (the locked tag and version replaced): check that it still holds: %s", a.Name, a.New, a.Unsigned)
			}
		}
		if a.SHA256 != "" && !a.Signed {
			rep.Warningf("%s %s has no signature pinned in the lock: its checksum rests on %s; review it", a.Name, a.New, a.Download())
		}
		if a.DroppedProfile != "" {
			rep.Warningf("the recorded PGO profile for %s was removed from the lock (trained on the sources or builder this update replaces): the update workflow records a new one; by hand: go run ./ci pgo-profile --write", a.DroppedProfile)
		}
		if k := a.NewKey; k != nil {
			keys = append(keys, k.Fingerprint)
			what, why := "vendored the pinned", ""
			if a.RefreshedKey {
				what, why = "refreshed the vendored", "; its vendored copy had expired before this release was signed"
			}
			rep.Warningf("%s %s: %s signer key %s (%s) from %s, expires %s%s: review it", a.Name, a.New, what, k.Fingerprint, strings.Join(k.UserIDs, "; "), k.Source, k.Expires, why)
		}
	}
	outputs["new_keys"] = strings.Join(keys, " ")
	summary := rows
	hosts, _ := cfg.run.GroupUnreachable(refused)
	for _, r := range refused {
		what := "refused"
		if r.Target == "" {
			what = "failed"
		}
		// In the terminal each refusal is an error line of its own, with its fix, under the
		// table: a row would say it again. The step summary keeps the row; a server that
		// could not be reached is named there, its fix once in the error annotation.
		row := actions.Row{Component: r.Name, Old: what, New: r.Target, EOL: r.Fix, SummaryOnly: true}
		if h, ok := unreachableFor(hosts, r); ok {
			row.EOL = h.Host + ": " + h.What
		}
		summary = append(summary, row)
	}
	if err := rep.UpdateSummary(ctx, "Upstream updates ("+lockFile+")", summary); err != nil {
		return err
	}
	if err := rep.SetOutputs(ctx, outputs); err != nil {
		return err
	}
	advWritten := o.Advisories != nil && o.Advisories.Written
	if (written || advWritten) && cfg.prBody != "" {
		// The body quotes refusals, whose text a server may have written: one redaction rule.
		body := safeio.Redact(upstream.SecurityBody(o.Security)+upstream.AdvisoriesBody(o.Advisories)+upstream.PRBody(applied, refused, report.Warnings)+"\n"+outputs["summary"], append([]string{cfg.run.Token}, cfg.secrets...)...)
		if err := notInterrupted(ctx, "--pr-body "+cfg.prBody+" (the lock "+lockFile+" was updated)"); err != nil {
			return err
		}
		if err := safeio.ReplaceFile(cfg.prBody, []byte(body), 0o644); err != nil {
			return fmt.Errorf("writing the pull request body %q (the lock %s was updated): %w", cfg.prBody, lockFile, err)
		}
	}
	printWritten(rep.Writer(), o, lockFile, write)
	return nil
}

// printWritten says, under the table, what was written or would be with --write.
func printWritten(w io.Writer, o *upstream.Outcome, lockFile string, write bool) {
	report, applied, refused, written := o.Report, o.Applied, o.Refused, o.Written
	advWritten := o.Advisories != nil && o.Advisories.Written
	switch {
	case written:
		fmt.Fprintf(w, "updated %s:\n", lockFile)
		for _, a := range applied {
			fmt.Fprintf(w, "  %s: %s -> %s%s\n", a.Name, orNone(a.Old), a.New, appliedHow(a))
		}
	case report.Changed() && !write:
		fmt.Fprintf(w, "updates are available: run with --write to verify them and update %s\n", lockFile)
	case !report.Changed() && len(refused) == 0 && !o.Advisories.Changed():
		fmt.Fprintln(w, "everything is up to date")
	}
	if a := o.Advisories; advWritten {
		fmt.Fprintf(w, "refreshed %s: %s\n", a.Path, a.Counts())
	} else if a.Changed() && !write {
		fmt.Fprintf(w, "the advisory feeds differ from the snapshot (%s): run with --write to refresh it\n", a.Counts())
	}
}

// unreachableFor is the server r's failure is grouped under, if it is.
func unreachableFor(hosts []upstream.Unreachable, r upstream.Refusal) (upstream.Unreachable, bool) {
	name := r.Name
	if r.Target != "" {
		name += " " + r.Target
	}
	for _, h := range hosts {
		if slices.Contains(h.Names, name) {
			return h, true
		}
	}
	return upstream.Unreachable{}, false
}

func appliedHow(a upstream.Applied) string {
	switch {
	case a.IsImage():
		return " (index: " + strings.Join(a.Platforms, ", ") + ")"
	case a.Git != nil:
		return " (git tag " + a.Git.Tag + ", commit " + a.Git.Commit + ", tree " + a.Git.Tree + " verified; no signature)"
	case a.NewKey != nil:
		how := "whose key is now vendored in "
		if a.RefreshedKey {
			how = "whose vendored key is refreshed in "
		}
		return " (sha256 " + a.SHA256 + ", signed by " + a.SignedBy + ", " + how + a.NewKey.Fingerprint + ".asc; top directory " + a.TopDir + "/)"
	case a.Signed:
		return " (sha256 " + a.SHA256 + ", signed by " + a.SignedBy + ", top directory " + a.TopDir + "/)"
	case a.DroppedProfile != "":
		return ""
	}
	return " (sha256 " + a.SHA256 + ", checksum only, top directory " + a.TopDir + "/)"
}

// updateRows turns the report into summary rows and step outputs.
func updateRows(r *upstream.Report) ([]actions.Row, map[string]string) {
	out := map[string]string{"changed": fmt.Sprint(r.Changed())}
	var rows []actions.Row
	var updates, title []string
	for _, c := range r.Components {
		// The new column shows only what the lock would move to: upstream's newest when it is
		// older than the locked release is no update (a warning says so), so it reads
		// unchanged rather than as a version to move to.
		nw := c.Latest
		if !c.Update && nw != "" {
			nw = c.Current
		}
		rows = append(rows, actions.Row{Component: c.Name, Old: c.Current, New: nw, EOL: c.EOL})
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
