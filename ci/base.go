package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/standin"
)

func init() {
	register(&command{
		name:    "base",
		summary: "make a stand-in for the distroless runtime base from a Debian mirror (no registry needed)",
		usage:   "--mirror URL --output PATH [--suite trixie] [--arch amd64|arm64] [--cache DIR]",
		long: `
Makes a stand-in for ` + standin.Name + ` from Debian's packages,
for a machine that cannot pull it (air-gapped, or only a Debian mirror in reach): the same
packages (` + strings.Join(standin.Packages, ", ") + `), unpacked with
dpkg-deb (no maintainer scripts), distroless's users (nonroot 65532) and no shell, one
layer, user 65532; the same packages give the same digest. It needs apt-get and dpkg-deb
(Debian, Ubuntu) and runs as any user; apt's state is private to the cache directory, so the
machine's apt is neither read nor changed.

The image is written to --output as an OCI layout directory, or a docker-archive tarball
when the path ends in .tar, and its --runtime-image spelling is printed on standard output:
ci build --runtime-image oci:DIR builds on it.`,
		checked: func(fs *flag.FlagSet) (func() error, func(context.Context, io.Writer, io.Writer) error) {
			var o standin.Options
			fs.StringVar(&o.Mirror, "mirror", "", "the Debian archive `URL` (http://HOST/debian: a mirror, or a copy served over http)")
			fs.StringVar(&o.Suite, "suite", "trixie", "Debian `suite` (distroless -debian13 is trixie; the builder's glibc must not be newer than the suite's)")
			fs.StringVar(&o.Arch, "arch", plan.DefaultPlatform.Arch, "Debian `architecture` of a platform builds target ("+plan.SupportedList()+")")
			output := fs.String("output", "", "write the image to `PATH`: an OCI layout directory, or a docker-archive tarball if it ends in .tar (must not exist)")
			cache := fs.String("cache", "", "cache `DIR` for apt's private state and the unpacked packages (default: "+standin.DefaultCacheDir+" as root, else $XDG_CACHE_HOME/nginx-forge/base)")
			verbose := fs.Bool("v", false, "verbose: show apt's steps")
			check := func() error { return checkBaseFlags(&o, *output) }
			return check, func(ctx context.Context, stdout, stderr io.Writer) error {
				return makeBase(ctx, o, *output, *cache, *verbose, stdout, stderr)
			}
		},
	})
}

// baseCacheDir is where ci base keeps apt's private state and the unpacked packages: the
// tests' shared cache as root (standin.DefaultCacheDir), else the user's cache directory.
func baseCacheDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if os.Geteuid() == 0 {
		return standin.DefaultCacheDir, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", usageErrorf("finding a cache directory for uid %d: %v: set XDG_CACHE_HOME or HOME, or give --cache DIR", os.Getuid(), errors.Unwrap(err))
	}
	return filepath.Join(d, "nginx-forge", "base"), nil
}

// checkBaseFlags is ci base's usage check: what it refuses before anything is fetched.
func checkBaseFlags(o *standin.Options, output string) error {
	if output == "" {
		return usageErrorf("--output PATH is required: where the image is written (a directory, or FILE.tar)")
	}
	if _, err := os.Lstat(output); err == nil {
		return usageErrorf("--output %s exists: choose a new path or remove it", output)
	}
	if err := o.CheckMirror(); err != nil {
		return usageErrorf("--mirror: %v", err)
	}
	if _, err := plan.ParsePlatform("linux/" + o.Arch); err != nil { // a Debian architecture is a linux platform's
		return usageErrorf("--arch %q: not the architecture of a platform builds target (%s)", o.Arch, plan.SupportedList())
	}
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return usageErrorf("ci base needs %s (Debian/Ubuntu: apt-get install apt dpkg): %v", tool, err)
		}
	}
	return nil
}

// makeBase makes the stand-in, writes it to output and prints its --runtime-image spelling.
func makeBase(ctx context.Context, o standin.Options, output, cache string, verbose bool, stdout, stderr io.Writer) error {
	if err := checkBaseFlags(&o, output); err != nil {
		return err
	}
	dir, err := baseCacheDir(cache)
	if err != nil {
		return err
	}
	o.CacheDir = dir
	sink, _ := newLog(stderr, verbose, false)
	o.Progress = sink
	start := time.Now()
	sink.Send(progress.Infof("base: %s %s/%s from %s", strings.Join(standin.Packages, " "), o.Suite, o.Arch, o.Mirror))
	r, err := standin.Build(ctx, o)
	if err != nil {
		return fmt.Errorf("making the stand-in base: %w", err)
	}
	img, err := standin.Image(r, o.Arch)
	if err != nil {
		return err
	}
	if err := notInterrupted(ctx, "--output "+output); err != nil {
		return err
	}
	if err := image.WriteOutput(output, img, "localhost/nginx-forge-base:nonroot", nil, time.Time{}); err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(output)
	if err != nil {
		return err
	}
	scheme := image.SchemeOCI
	if strings.HasSuffix(output, ".tar") {
		scheme = image.SchemeDockerArchive
	}
	sink.Send(progress.Infof("base: %s (%s) in %s", abs, d, time.Since(start).Round(time.Second)))
	fmt.Fprintf(stdout, "%s:%s\n", scheme, abs)
	return nil
}
