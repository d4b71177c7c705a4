package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/engine/daggerexec"
	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// engineName is --engine's value, judged as the flag is parsed: the one place that knows the
// engines' names (ci build and ci smoke declare the flag with it).
type engineName string

const (
	hostEngine   engineName = engine.Host
	daggerEngine engineName = engine.Dagger
)

func (n *engineName) String() string { return string(*n) }

func (n *engineName) Set(s string) error {
	switch engineName(s) {
	case hostEngine, daggerEngine:
		*n = engineName(s)
		return nil
	}
	return errors.New("use dagger or host")
}

// engineConfig is what a command tells the chooser: the engine, the host engine's cache and
// parallelism, where progress goes (-v shows the engine's own notes and output), and ci
// smoke's host-only mounts.
type engineConfig struct {
	name    engineName
	cache   string
	jobs    int
	sink    progress.Sink
	verbose bool
	confD   string // --conf-d (host)
	noTLS   bool   // --no-tls (host)
}

// newEngine is the engine --engine names: the one place that chooses, for ci build and ci
// smoke alike. Every engine builds, serves and smoke-tests through engine.Engine.
func newEngine(c engineConfig) (engine.Engine, error) {
	switch c.name {
	case hostEngine:
		dir, err := cacheDir(c.cache)
		if err != nil {
			return nil, err
		}
		opts := []host.Option{host.WithCacheDir(dir), host.WithJobs(c.jobs), host.WithProgress(c.sink)}
		if c.confD != "" {
			opts = append(opts, host.WithSmokeConfD(c.confD))
		}
		if c.noTLS {
			opts = append(opts, host.WithSmokeNoTLS())
		}
		return host.NewEngine(opts...), nil
	case daggerEngine:
		opts := []daggerexec.Option{daggerexec.WithProgress(c.sink)}
		if c.verbose {
			opts = append(opts, daggerexec.WithEngineOutput(c.sink))
		}
		return daggerexec.New(opts...), nil
	}
	return nil, usageErrorf("--engine %q: use dagger or host", c.name)
}

// cacheDir is where a build caches when --cache is not given: as root, the host engine's
// shared host.DefaultCacheDir (the tests' cache too); as anyone else, nginx-forge under the
// user's cache directory ($XDG_CACHE_HOME or ~/.cache), where pipeline/source keeps its
// verified sources by default, so a host build needs no sudo.
func cacheDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if os.Geteuid() == 0 {
		return host.DefaultCacheDir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", usageErrorf("finding a cache directory for uid %d: %v: set XDG_CACHE_HOME or HOME, or give --cache DIR", os.Getuid(), err)
	}
	return filepath.Join(base, "nginx-forge"), nil
}
