package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
)

func init() {
	register(&command{
		name:    "tags",
		summary: "print the tags a publish of the lock moves for a git ref (the README's tag table)",
		usage:   "[--lock FILE] [--ref REF] [--revision SHA] [--latest]",
		long: `
Prints, comma-separated, the tags that ci build --push and ci manifest --image REPO move
for this lock, git ref and commit: the one rule (forge.Request.PublishTags), which the README's tag
table describes. build.yml's merge job uses it to name the index's tags.`,
		flags: func(fs *flag.FlagSet) runFunc {
			lockFile := new(string)
			lockFlag(fs, lockFile, "lock `file`")
			ref := fs.String("ref", "", "the git `ref` built (GITHUB_REF): refs/heads/main, refs/tags/vX.Y.Z, ...")
			revision := fs.String("revision", "", "the `commit` built (GITHUB_SHA)")
			latest := fs.Bool("latest", false, "a person's build with --latest")
			tls, zlib := newLibraryFlags(fs)
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if err := noArgs("tags", args); err != nil {
					return err
				}
				if err := image.CheckRevision(*revision); err != nil {
					return usageErrorf("--revision %v", err)
				}
				tags, err := forge.Request{LockFile: *lockFile, TLS: *tls, Zlib: *zlib, Ref: *ref, Revision: *revision, Latest: *latest}.PublishTags()
				if err != nil {
					return err
				}
				if len(tags) == 0 {
					return fmt.Errorf("--ref %q without --revision moves no tag", *ref)
				}
				fmt.Fprintln(stdout, strings.Join(tags, ","))
				return nil
			}
		},
	})
}
