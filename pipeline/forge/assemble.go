package forge

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/bundle"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
)

func (b *build) buildAll(ctx context.Context) error {
	for _, t := range b.targets {
		if err := b.buildTarget(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// buildTarget builds one platform's install tree on the engine and, when an image is
// wanted, assembles the image and its SBOM.
func (b *build) buildTarget(ctx context.Context, t *target) error {
	p := t.plan
	treeDir := b.req.Tree
	if treeDir == "" {
		tmp, err := os.MkdirTemp("", "nginx-forge-tree-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		treeDir = tmp
	}
	start := time.Now()
	stages, err := b.eng.Build(ctx, p, b.sources, treeDir, b.stageProgress(p.Platform.String()))
	if err != nil {
		return err
	}
	t.res.Stages = stages
	if len(stages) > 0 {
		b.sink.Send(progress.Note{Level: progress.Info, Text: stagesTable(stages)})
	}
	if b.req.ProfileDir != "" {
		return b.recordProfile(ctx, t, treeDir)
	}
	b.sink.Send(progress.Infof("build: install tree for %s (cpu %s) took %s", p.Platform, p.CPU, time.Since(start).Round(time.Second)))
	if err := b.finishTree(ctx); err != nil {
		return err
	}
	if !b.req.WantsImage() {
		return nil
	}
	step := fmt.Sprintf("assemble (%s)", p.Platform)
	b.stepStarted(step)
	start = time.Now()
	libcrypt, err := b.eng.PackageVersion(ctx, p, plan.LibcryptPackage)
	if err != nil {
		return err
	}
	t.toolchain = b.toolchain(ctx, p)
	imgOpts := []image.Option{image.WithBaseRef(b.runtimeRef()), image.WithLibcrypt(libcrypt), image.WithOptimize(p.Optimize), image.WithModules(p.Modules)}
	switch {
	case p.ProfileSHA256 != "":
		imgOpts = append(imgOpts, image.WithProfile("sha256:"+p.ProfileSHA256))
	case p.Optimize == plan.OptimizePGO:
		imgOpts = append(imgOpts, image.WithProfile(image.ProfileTrained))
	}
	if b.req.Revision != "" {
		imgOpts = append(imgOpts, image.WithRevision(b.req.Revision))
	}
	if b.req.Origin.Repository != "" {
		imgOpts = append(imgOpts, image.WithSource(b.req.Origin.Repository))
	}
	if t.img, err = image.Assemble(t.base, treeDir, b.l, imgOpts...); err != nil {
		return fmt.Errorf("assembling the image for %s: %w", p.Platform, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted while assembling the image for %s: %w", p.Platform, err)
	}
	if t.sbom, err = image.SBOM(t.img, b.l, imgOpts...); err != nil {
		return fmt.Errorf("writing the SBOM for %s: %w", p.Platform, err)
	}
	// Layers are computed now, while the tree (a temporary directory) exists.
	digest, err := t.img.Digest()
	if err != nil {
		return fmt.Errorf("computing the image digest for %s: %w", p.Platform, err)
	}
	size, err := image.SizeOf(t.img)
	if err != nil {
		return fmt.Errorf("measuring the image for %s: %w", p.Platform, err)
	}
	t.res.Digest, t.res.Size = digest.String(), size
	b.stepDone(step, time.Since(start), progress.Built)
	b.sink.Send(progress.Infof("image: %s (%s on %s), %s", digest, p.Platform, b.runtimeRef(), size))
	return nil
}

// finishTree adds the bare-metal files to --tree when --bundle asks for them (unless the
// build was interrupted meanwhile) and names the tree.
func (b *build) finishTree(ctx context.Context) error {
	if b.req.Tree == "" {
		return nil
	}
	if b.req.Bundle {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: the bare-metal files were not added to --tree %s: %w", b.req.Tree, err)
		}
		if err := b.writeBundle(b.req.Tree); err != nil {
			return err
		}
	}
	b.sink.Send(progress.Infof("tree: %s", b.req.Tree))
	return nil
}

// writeBundle adds the bare-metal files (systemd unit, sysusers.d, sysctl.d) to the tree.
func (b *build) writeBundle(tree string) error {
	conf, err := os.ReadFile(tree + "/etc/nginx/nginx.conf")
	if err != nil {
		return fmt.Errorf("--bundle: reading the tree's nginx.conf: %w", err)
	}
	files, err := bundle.Write(tree, conf)
	if err != nil {
		return fmt.Errorf("--bundle: %w", err)
	}
	b.sink.Send(progress.Infof("bundle: %s", strings.Join(files, ", ")))
	return nil
}

// toolchain reads the version of each of p's toolchain packages where it was built, for the
// provenance. A package the engine cannot read (this machine's compiler may come from
// packages of other names) is left out and said in the detailed log: the provenance
// records what was read, and no build fails over a record.
func (b *build) toolchain(ctx context.Context, p *plan.Plan) []sign.NameVersion {
	var out []sign.NameVersion
	for _, pkg := range p.ToolchainPackages() {
		v, err := b.eng.PackageVersion(ctx, p, pkg)
		if err != nil {
			if ctx.Err() != nil {
				return out
			}
			b.sink.Send(progress.Detailf("provenance: the version of %s in the builder was not read: %v", pkg, err))
			continue
		}
		out = append(out, sign.NameVersion{Name: pkg, Version: v})
	}
	return out
}
