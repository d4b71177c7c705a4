package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

const rebuildHelp = `
Builds a published image again and says whether the rebuild gives the same digest: anyone
with the checkout and the public key can check that an image is what its provenance says.

It reads the SLSA provenance ci build --push --sign-key attached to IMAGE@DIGEST (one
platform's image; an index's platform images each carry their own), checking its signature
with --key first. It refuses, before anything is fetched or built, a provenance that does not
verify, a checkout that is not at the revision it records (or has uncommitted changes to
tracked files), and a lock or flags that differ from what it records (the message names the
first field). Then it builds with the recorded engine (dagger or host: another engine
compiles with another toolchain), platform, CPU level, optimization and
modules, from this checkout's lock (--lock, or --tls/--zlib as for ci build), and compares.

Exit status 0: the same digest (printed). With --attest, a rebuild that matched is attested
with --sign-key: an in-toto statement of SLSA's verification summary
(` + forge.RebuildPredicateType + `, verifiedLevels ` + forge.RebuildMatched + `),
attached beside the image's other attestations, which cosign verify-attestation --key PUB
--type ` + forge.RebuildPredicateType + ` --insecure-ignore-tlog=true accepts.
Exit status 1: another digest; the message names the first layer and the first file that
differ, and how (content, mode, mtime, owner, type, link target). Exit status 2: refused.`

// rebuildFlags are rebuild's flags.
type rebuildFlags struct {
	key, signKey   string
	attest         bool
	engine         engineName
	lockFile       string
	tls, zlib      string
	mirror, cache  string
	runtimeImage   string
	builderImage   string
	insecure       bool
	verbose, quiet bool
	jobs           int
}

// rebuildCheckout is checkoutRevision; the end-to-end test, whose pushed image records a
// revision of its own, replaces it.
var rebuildCheckout = checkoutRevision

func init() {
	register(&command{
		name:    "rebuild",
		summary: "Build a published image again from its signed provenance and compare the digests",
		usage:   "--key PUB [--attest --sign-key KEY] [--lock FILE] [--mirror URL] IMAGE@DIGEST",
		long:    rebuildHelp,
		flags: func(fs *flag.FlagSet) runFunc {
			var f rebuildFlags
			fs.StringVar(&f.key, "key", "", "the PEM public `FILE` that verifies the provenance's signature (cosign.pub; required)")
			fs.BoolVar(&f.attest, "attest", false, "attest a rebuild that matched, signed with --sign-key, and attach it to the image")
			fs.StringVar(&f.signKey, "sign-key", "", "with --attest: the PEM private key `FILE` that signs the rebuild attestation (as ci build --sign-key)")
			lockFlag(fs, &f.lockFile, "lock `file` to rebuild from (checked against the provenance)")
			libraryFlags(fs, &f.tls, &f.zlib)
			fs.StringVar(&f.mirror, "mirror", "", "fetch every file as `URL`/<file name> instead of upstream (same checks)")
			fs.StringVar(&f.cache, "cache", "", "cache `DIR`, as ci build's (an empty one rebuilds every stage)")
			fs.StringVar(&f.runtimeImage, "runtime-image", "", "base the rebuild on `REF` instead of the lock's runtime image (as ci build's; a different base gives a different digest)")
			fs.StringVar(&f.builderImage, "builder-image", "", "dagger engine: build in `REF` instead of the lock's builder image")
			fs.BoolVar(&f.insecure, "insecure", false, "allow plain HTTP to a registry that is not on loopback")
			fs.IntVar(&f.jobs, "jobs", 0, "parallel compile jobs (0: one per CPU)")
			fs.BoolVar(&f.verbose, "v", false, "verbose: show downloads, verification and registry steps")
			fs.BoolVar(&f.quiet, "q", false, "quiet: no \"still running\" line while a step runs")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				return runRebuild(ctx, f, args, stdout, stderr)
			}
		},
	})
}

func runRebuild(ctx context.Context, f rebuildFlags, args []string, stdout, stderr io.Writer) error {
	x, err := f.rebuild(args)
	if err != nil {
		return err
	}
	sink, closeGroups := newLog(stderr, f.verbose, false)
	defer closeGroups()
	rec, err := forge.ReadRebuildProvenance(ctx, x, image.WithProgress(sink))
	if err != nil {
		return err
	}
	p := rec.Platforms[0]
	sink.Send(progress.Infof("rebuild: %s: provenance verified (%s engine, %s, cpu %s, optimize %s, revision %s)", x.Ref, rec.Engine, p.Platform, p.CPU, p.Optimize, orNone(rec.Origin.Revision)))
	if err := checkRebuildCheckout(ctx, x.Ref, rec.Origin.Revision); err != nil {
		return err
	}
	// The engine is the provenance's: another compiles with another toolchain, and gives
	// another digest.
	var eng engineName
	if err := eng.Set(rec.Engine); err != nil {
		return usageErrorf("the provenance records engine %q, which this program does not have: %v", rec.Engine, err)
	}
	if !f.quiet {
		defer sink.heartbeat()()
	}
	e, err := newEngine(engineConfig{name: eng, cache: f.cache, jobs: f.jobs, sink: sink, verbose: f.verbose})
	if err != nil {
		return err
	}
	res, err := forge.RunRebuild(ctx, e, x, rec, forge.WithProgress(sink), forge.WithBranchWarnings(branchWarnings))
	switch {
	case errors.Is(err, forge.ErrRebuildDiffers):
		return &exitError{code: 1, err: err}
	case err != nil:
		return err
	}
	sink.Send(progress.Infof("rebuild: the same digest: %s", res.Rebuilt))
	if res.Attestation != nil {
		sink.Send(progress.Infof("rebuild: attested (%s, %s)", forge.RebuildPredicateType, res.Attestation.DigestStr()))
	}
	closeGroups()
	fmt.Fprintln(stdout, x.Ref.String())
	return nil
}

// rebuild is the request the flags and the argument make, judged before anything is read.
func (f rebuildFlags) rebuild(args []string) (forge.Rebuild, error) {
	if len(args) != 1 {
		return forge.Rebuild{}, usageErrorf("give one IMAGE@DIGEST to rebuild (got %d arguments)", len(args))
	}
	var nopts []name.Option
	if f.insecure {
		nopts = append(nopts, name.Insecure)
	}
	ref, err := name.NewDigest(args[0], nopts...)
	if err != nil {
		return forge.Rebuild{}, usageErrorf("%s is not an image by digest (REPO@sha256:...): %v; a tag can move, the digest is what a rebuild compares", quoteShort(args[0]), err)
	}
	if f.key == "" {
		return forge.Rebuild{}, usageErrorf("--key PUB is required: the public key whose private half signed the provenance (cosign.pub)")
	}
	if f.attest != (f.signKey != "") {
		return forge.Rebuild{}, usageErrorf("--attest and --sign-key go together: --attest --sign-key KEY attests a rebuild that matched")
	}
	origin, err := readOrigin("", "", realOrigin)
	if err != nil {
		return forge.Rebuild{}, err
	}
	return forge.Rebuild{
		Ref: ref, Key: f.key, SignKey: f.signKey, VerifierID: origin.BuilderID,
		Build: forge.Request{
			LockFile: f.lockFile, TLS: f.tls, Zlib: f.zlib, Mirror: f.mirror, CacheDir: f.cache,
			RuntimeImage: f.runtimeImage, BuilderImage: f.builderImage, Insecure: f.insecure, Jobs: f.jobs,
		},
	}, nil
}

// checkRebuildCheckout refuses a checkout that is not at the revision the provenance records.
func checkRebuildCheckout(ctx context.Context, ref name.Digest, revision string) error {
	if revision == "" {
		return usageErrorf("the provenance of %s records no revision: a rebuild needs the commit it was built from (ci build --revision, or a build from a checkout)", ref)
	}
	head, err := rebuildCheckout(ctx)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if head != revision {
		return usageErrorf("this checkout is at %s; the provenance records %s: check it out (git checkout %s) and run again", head, revision, revision)
	}
	return nil
}

// checkoutRevision is the working directory's checkout: its HEAD commit, refused when a
// tracked file has changes (a rebuild from other sources than the commit proves nothing).
func checkoutRevision(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("ci rebuild runs in a git checkout of the repository the provenance names: git rev-parse HEAD: %w", err)
	}
	head := strings.TrimSpace(string(out))
	st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return "", fmt.Errorf("git status: %w", err)
	}
	if s := strings.TrimSpace(string(st)); s != "" {
		first, _, _ := strings.Cut(s, "\n")
		return "", fmt.Errorf("this checkout has uncommitted changes to tracked files (%s ...): commit or stash them, a rebuild builds the recorded commit", strings.TrimSpace(first))
	}
	return head, nil
}
