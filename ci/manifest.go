package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

func init() {
	register(&command{
		name:    "manifest",
		summary: "assemble a multi-platform index from per-platform digests, push it, then tag it",
		usage:   "--image REPO[:TAG,...] [--ref REF --revision SHA] [--sign-key FILE] [--dry-run] DIGEST_REF...",
		long: `
For the workflow that builds each architecture on its own runner: every runner pushes its
image by digest, and this command joins them. Each DIGEST_REF is REPO@sha256:... (or just
sha256:..., meaning --image's repository). The platform of each entry is read from that
image's config; entries are sorted by platform, so the index digest does not depend on the
argument order; two images of one platform are refused.

The tags are those --image names, or, for --image REPO alone, the ones the lock, --ref and
--revision decide (the same rule as ci build --push; docs/tags.md). The index is pushed by
digest first, then the tags move, all or none (as when publishing an image: a failure puts
every tag back where it was and says what, if anything, the registry kept). Transient
registry errors are retried. Credentials come from the Docker config and, for ghcr.io,
GITHUB_TOKEN; they are never printed.

--sign-key FILE signs the index as ci build --push --sign-key signs the index it pushes
(the same key formats; COSIGN_PASSWORD for cosign's own), after it is pushed by digest and
before any tag moves: the signature (REPO:sha256-<hex>.sig) and, as attestations signed with
the key (.att), the SPDX SBOM ci build attached to each platform image. An image without one
is refused. No provenance is attested for the index (it was not built here; each platform
image carries its own). cosign verify --key and verify-attestation --key --type spdxjson
(--insecure-ignore-tlog=true) accept it.

Prints REPO@sha256:... of the index. --dry-run reads the per-platform images, prints the
index manifest and the tags it would move, and writes nothing. Every registry request runs
under one --timeout for the whole run (default 5m).`,
		flags: func(fs *flag.FlagSet) runFunc {
			imageFlag := fs.String("image", "", "`REPO[:TAG,...]` to publish the index as (required); without tags, the tags --lock, --ref and --revision decide")
			lockFile := new(string)
			lockFlag(fs, lockFile, "lock `file` the images were built from (for the default tags)")
			ref := fs.String("ref", "", "the git `ref` built (GITHUB_REF), for the default tags")
			revision := fs.String("revision", "", "the `commit` built (GITHUB_SHA), for the default tags")
			dryRun := fs.Bool("dry-run", false, "print the index and tags without pushing anything")
			insecure := fs.Bool("insecure", false, "allow plain HTTP to a registry that is not on loopback")
			verbose := fs.Bool("v", false, "print each registry step on standard error")
			tls, zlib := newLibraryFlags(fs)
			signKey := fs.String("sign-key", "", "sign the index with this PEM private key `FILE` (cosign.key with COSIGN_PASSWORD, or unencrypted PKCS#8/EC) and attest it with each platform image's SBOM, before any tag moves (as ci build --push --sign-key)")
			timeout := fs.Duration("timeout", defaultManifestTimeout, "one `deadline` for every registry request of the run (also --dry-run): a registry that never answers fails the run after this long")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if *imageFlag == "" {
					return usageErrorf("--image REPO[:TAG,...] is required")
				}
				if *timeout <= 0 {
					return usageErrorf("--timeout %s must be positive", *timeout)
				}
				repo, tags, err := parseImage(*imageFlag)
				if err != nil {
					return err
				}
				if err := image.CheckRevision(*revision); err != nil {
					return usageErrorf("--revision %v", err)
				}
				if err := image.CheckRef(*ref); err != nil {
					return usageErrorf("--ref %v", err)
				}
				if len(tags) == 0 {
					req := forge.Request{LockFile: *lockFile, TLS: *tls, Zlib: *zlib, Ref: *ref, Revision: *revision}
					if tags, err = req.PublishTags(); err != nil {
						return err
					}
					if len(tags) == 0 {
						return usageErrorf("--ref %q with no --revision moves no tag: name the tags in --image REPO:TAG,...", *ref)
					}
				}
				refs, err := digestRefs(repo, args, *insecure)
				if err != nil {
					return err
				}
				sink, _ := newLog(stderr, *verbose, false)
				return withDeadline(ctx, *timeout, func(ctx context.Context) error {
					return runManifest(ctx, stdout, forge.Index{Repo: repo, Tags: tags, Refs: refs, Insecure: *insecure, SignKey: *signKey}, *dryRun, sink)
				})
			}
		},
	})
}

// digestRefs are manifest's arguments as REPO@sha256:... references (sha256:... alone is
// in repo).
func digestRefs(repo string, args []string, insecure bool) ([]string, error) {
	if len(args) == 0 {
		return nil, usageErrorf("give at least one per-platform DIGEST_REF (REPO@sha256:...)")
	}
	refs := make([]string, 0, len(args))
	for _, a := range args {
		if strings.HasPrefix(a, "sha256:") {
			a = repo + "@" + a
		}
		var nopts []name.Option
		if insecure {
			nopts = append(nopts, name.Insecure)
		}
		if _, err := name.NewDigest(a, nopts...); err != nil {
			return nil, usageErrorf("argument %q is not a digest reference (REPO@sha256:... or sha256:...): %v", a, err)
		}
		refs = append(refs, a)
	}
	return refs, nil
}

func runManifest(ctx context.Context, stdout io.Writer, x forge.Index, dryRun bool, sink progress.Sink) error {
	if dryRun {
		out, digest, err := x.DryRun(ctx, sink)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", out)
		fmt.Fprintf(stdout, "dry run: would push %s@%s and move tags %s; nothing written\n", x.Repo, digest, strings.Join(x.Tags, ", "))
		return nil
	}
	d, err := x.Publish(ctx, sink)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, d.String())
	return nil
}
