package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

func init() {
	register(&command{
		name:    "tags",
		summary: "print the tags a publish of the lock moves for a git ref (docs/tags.md's table)",
		usage:   "[--lock FILE] [--ref REF] [--revision SHA] [--latest]",
		long: `
Prints, comma-separated, the tags that ci build --push and ci manifest --image REPO move
for this lock, git ref and commit: the one rule (forge.Request.PublishTags), which the README's tag
table describes. build.yml's merge job uses it to name the index's tags. When no tag moves
(a pull request's ref, or a branch other than main without --revision) it prints nothing,
says so on standard error and exits 0.`,
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
				sink, _ := newLog(stderr, false, false)
				if strings.HasPrefix(*ref, "refs/pull/") {
					// A pull request builds and smoke-tests, and publishes nothing (docs/tags.md).
					sink.Send(progress.Infof("ci tags: --ref %s is a pull request: it moves no tag", *ref))
					return nil
				}
				tags, err := forge.Request{LockFile: *lockFile, TLS: *tls, Zlib: *zlib, Ref: *ref, Revision: *revision, Latest: *latest}.PublishTags()
				if err != nil {
					return err
				}
				if len(tags) == 0 {
					// Nothing to move is an answer, not a failure: a script reads an empty line.
					sink.Send(progress.Infof("ci tags: --ref %q without --revision moves no tag", *ref))
					return nil
				}
				fmt.Fprintln(stdout, strings.Join(tags, ","))
				return nil
			}
		},
	})
}
