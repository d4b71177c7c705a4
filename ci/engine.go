package main

import (
	"os"
	"path/filepath"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/engine/daggerexec"
	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// engineFor is the engine --engine names: the one place that chooses. The host engine caches
// its stages in cache; the Dagger engine's own progress output goes to the sink as Detail
// notes (shown with -v) when verbose.
func engineFor(name, cache string, jobs int, sink progress.Sink, verbose bool) (engine.Engine, error) {
	logf := progress.Logf(sink, progress.Detail)
	switch name {
	case "host":
		dir, err := cacheDir(cache)
		if err != nil {
			return nil, err
		}
		return host.NewEngine(host.WithCacheDir(dir), host.WithJobs(jobs), host.WithLogf(logf)), nil
	case "dagger":
		opts := []daggerexec.Option{daggerexec.WithLogf(logf)}
		if verbose {
			opts = append(opts, daggerexec.WithEngineOutput(logf))
		}
		return daggerexec.New(opts...), nil
	}
	return nil, usageErrorf("--engine %q: use dagger or host", name)
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
