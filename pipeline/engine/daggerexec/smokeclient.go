package daggerexec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"dagger.io/dagger"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// smokeClient is the in-engine smoke client for p's platform, built by the engine from the
// module's source in root (plan.SmokeClientStep): a mapping of the plan's steps, so the
// engine caches the client by exactly the builder image, go.mod, go.sum and the client's
// packages. The steps run on the engine's own platform.
func (e *Executor) smokeClient(p *plan.Plan, root string) *dagger.File {
	b := p.SmokeClientStep()
	c := e.client.Container().From(b.Image)
	for _, dir := range plan.ContainerAptCacheDirs {
		// Keyed apart from the builder's volumes: this container's platform is the engine's.
		c = c.WithMountedCache(dir, e.client.CacheVolume(cacheKey(b.Image, clientPlatform, dir)),
			dagger.ContainerWithMountedCacheOpts{Sharing: dagger.CacheSharingModeLocked})
	}
	c = c.WithExec(b.Setup)
	for _, dir := range plan.ContainerAptCacheDirs {
		c = c.WithoutMount(dir)
	}
	for _, v := range b.Env {
		c = c.WithEnvVariable(v.Name, v.Value)
	}
	for _, f := range b.ModFiles {
		c = c.WithFile(path.Join(b.SrcDir, f), e.client.Host().File(filepath.Join(root, filepath.FromSlash(f))))
	}
	c = c.WithWorkdir(b.SrcDir).WithExec(b.Download)
	src := e.client.Host().Directory(root, dagger.HostDirectoryOpts{Include: b.Sources, Exclude: b.SourcesExcluded})
	c = c.WithDirectory(b.SrcDir, src).
		WithMountedCache(b.BuildCache, e.client.CacheVolume(cacheKey(b.Image, clientPlatform, b.BuildCache)))
	for _, v := range b.BuildEnv {
		c = c.WithEnvVariable(v.Name, v.Value)
	}
	return c.WithExec(b.Build).File(b.Out)
}

// clientPlatform keys the client build's cache volumes: its containers run on the engine's
// platform, whatever the plan's.
const clientPlatform = "the engine's platform"

// moduleRoot is the checkout the smoke client is built from: the nearest directory, from
// the working directory up, whose go.mod is plan.SmokeClientModule's (where `go run ./ci`
// runs).
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("dagger smoke: finding the module the in-engine smoke client is built from: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(data) == plan.SmokeClientModule {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("dagger smoke: the engine builds its in-engine smoke client from the source of %s, and neither %s nor a parent holds its go.mod: run ci from the nginx-forge checkout", plan.SmokeClientModule, wd)
		}
	}
}

// modulePath is the module path a go.mod declares ("" if none).
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			rest, _, _ = strings.Cut(rest, "//")
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
