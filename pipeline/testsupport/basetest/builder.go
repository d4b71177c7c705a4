package basetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/standin"
)

// builderRecipe changes whenever the way the builder layer is made changes, so a cached
// layer made by older code is not reused.
const builderRecipe = "builder-1"

// BuilderImage returns a stand-in for the lock's builder image (ubuntu:24.04, which cannot
// be pulled here): Debian (o.Suite) made by debootstrap --variant=minbase, so apt, dpkg and
// bash but no compiler. That is the point: the Dockerfile's builder stage must install the
// build packages with apt itself, as it does on ubuntu:24.04.
//
// The layer is cached as a gzip tarball under o.CacheDir (about 50 MB), so only the first
// run on a machine runs debootstrap (about 40 s and 40 MB from the Debian archive). Its
// package lists and downloaded .debs are removed: the Dockerfile runs apt-get update.
// Needs root and debootstrap.
func BuilderImage(ctx context.Context, o Options) (v1.Image, error) {
	o.Defaults()
	unlock, err := standin.LockCache(o.CacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	cached := filepath.Join(o.CacheDir, fmt.Sprintf("%s-%s-%s.tar.gz", builderRecipe, o.Suite, o.Arch))
	if _, err := os.Stat(cached); err != nil {
		if err := makeBuilderLayer(ctx, o, cached); err != nil {
			return nil, err
		}
	} else {
		o.Progress.Send(progress.Detailf("builder layer %s (cached)", cached))
	}
	layer, err := tarball.LayerFromFile(cached, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("reading the builder layer %s: %w", cached, err)
	}
	return standin.SingleLayerImage(layer, o.Arch, v1.Time{},
		v1.History{CreatedBy: "debootstrap --variant=minbase " + o.Suite, Comment: "nginx-forge basetest: stand-in builder image"},
		v1.Config{Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, Cmd: []string{"bash"}})
}

func makeBuilderLayer(ctx context.Context, o Options, dest string) error {
	if err := findMirror(&o); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(o.CacheDir, ".builder-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "rootfs")
	o.Progress.Send(progress.Detailf("debootstrap --variant=minbase %s from %s", o.Suite, o.Mirror))
	run := func(name string, args ...string) error {
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %v: %w: %s", name, args, err, toolbox.Tail(string(out), 1500))
		}
		return nil
	}
	if err := run("debootstrap", "--variant=minbase", "--arch="+o.Arch, o.Suite, root, o.Mirror); err != nil {
		return fmt.Errorf("making the builder stand-in (is the Debian mirror from the apt sources reachable, and are we root?): %w", err)
	}
	// Device nodes are the runtime's business (it mounts /dev); lists and .debs are stale
	// by the time the image is used.
	for _, pattern := range []string{"dev/*", "var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*_*"} {
		matches, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	// GNU tar keeps what a Debian system has and image.TreeLayer deliberately drops: owners
	// other than root (/etc/shadow's group), setuid and setgid bits, hard links.
	partial := filepath.Join(tmp, "layer.tar.gz")
	if err := run("tar", "--numeric-owner", "--sort=name", "-C", root, "-czf", partial, "."); err != nil {
		return fmt.Errorf("packing the builder stand-in: %w", err)
	}
	// The rename publishes the finished layer at once: a crash never leaves a half-written one.
	return os.Rename(partial, dest)
}
