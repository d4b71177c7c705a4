package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

const pgoProfileHelp = `Train the pgo build once and record its profile, so that every --optimize pgo build of
the lock uses that profile instead of training for itself, and is reproducible.

A training counts a little differently each time it runs (timing, random handshakes), so
two builds that each train give two binaries. This command builds OpenSSL and nginx
instrumented exactly as 'ci build --optimize pgo' would (same lock, platform, CPU level
and modules), runs the training workload on loopback, and writes the counters as one
tarball per platform into --dir, named after the platform and the training key (a digest
of the sources, flags, modules and workload it was trained for).

Keep the tarball in the repository (--in-repo: the lock entry's url is
profiles/<file name>, relative to the lock; with --write the file is copied there and both
are committed together; update.yml records them this way), or serve it over https (--url
BASE prints the entry with BASE/<file name>). --write adds the entry to --lock (one profile
per platform; a new one replaces the old). A build whose plan has another
training key (a new nginx, another CPU level or module set) trains for itself again and
warns. The profile is tied to the compiler it was trained with: the build stops, naming
both, when the builder's differs.

Examples:
  go run ./ci pgo-profile --engine host --dir out/pgo --in-repo --write
  go run ./ci pgo-profile --dir out/pgo --url https://example.org/nginx-pgo --write`

type pgoProfileFlags struct {
	build   buildFlags
	dir     string
	baseURL string
	inRepo  bool
	write   bool
}

func init() {
	register(&command{
		name:    "pgo-profile",
		summary: "Train the pgo build once and record its profile into the lock (reproducible pgo builds)",
		usage:   "--dir DIR [--url BASE [--write]] [flags]",
		long:    pgoProfileHelp,
		checked: func(fs *flag.FlagSet) (func() error, func(context.Context, io.Writer, io.Writer) error) {
			var f pgoProfileFlags
			fs.StringVar(&f.dir, "dir", "", "write the profile tarballs into `DIR`")
			fs.StringVar(&f.baseURL, "url", "", "https `BASE` URL the tarballs will be served from: print the lock entries with BASE/<file name>")
			fs.BoolVar(&f.inRepo, "in-repo", false, "keep the profiles in the repository: the lock entries' url is profiles/<file name>, relative to the lock (with --write the files are copied there)")
			fs.BoolVar(&f.write, "write", false, "with --url or --in-repo: record the profiles in the --lock file")
			f.build.stackFlags(fs)
			fs.BoolVar(&f.build.verbose, "v", false, "verbose")
			check := func() error { _, err := f.validRequest(); return err }
			return check, func(ctx context.Context, stdout, stderr io.Writer) error {
				return runPGOProfile(ctx, f, stdout, stderr)
			}
		},
	})
}

func (f pgoProfileFlags) check() error {
	if f.dir == "" {
		return usageErrorf("--dir is required: where to write the profile tarballs")
	}
	if f.write && f.baseURL == "" && !f.inRepo {
		return usageErrorf("--write needs --in-repo or --url BASE: the lock records where the profile is fetched from")
	}
	if f.inRepo && f.baseURL != "" {
		return usageErrorf("--in-repo and --url both say where the profile lives: give one")
	}
	if f.baseURL != "" {
		u, err := url.Parse(f.baseURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return usageErrorf("--url %q: give the https URL of the directory the tarballs will be served from", f.baseURL)
		}
		// The lock records URL/<tarball>: a query or fragment would end up before the file
		// name, and credentials in a committed lock are published with it.
		if u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(f.baseURL, "#") || u.User != nil {
			return usageErrorf("--url %q: give the directory's URL without a query, fragment or user information (the lock records URL/<tarball name>)", safeio.RedactURL(f.baseURL))
		}
	}
	return nil
}

// validRequest is the training build's request, validated: all pgo-profile checks before
// anything is fetched or built.
func (f pgoProfileFlags) validRequest() (*forge.Resolved, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	f.build.noSmoke = true
	req, err := f.build.request()
	if err != nil {
		return nil, err
	}
	req.ProfileDir = f.dir
	return req.Resolve()
}

func runPGOProfile(ctx context.Context, f pgoProfileFlags, stdout, stderr io.Writer) error {
	rs, err := f.validRequest()
	if err != nil {
		return err
	}
	sink, closeGroups := newLog(stderr, f.build.verbose, false)
	defer closeGroups()
	eng, err := newEngine(engineConfig{name: f.build.engine, cache: f.build.cache, jobs: f.build.jobs, sink: sink, verbose: f.build.verbose})
	if err != nil {
		return err
	}
	res, err := forge.Run(ctx, eng, rs, forge.WithProgress(sink))
	if err != nil {
		return err
	}
	var entries []lock.Profile
	for _, p := range res.Profiles {
		e := p.Profile
		switch {
		case f.baseURL != "":
			e.URL = strings.TrimSuffix(f.baseURL, "/") + "/" + url.PathEscape(filepath.Base(p.File))
		case f.inRepo:
			e.URL = lock.ProfilesDir + "/" + filepath.Base(p.File)
		}
		entries = append(entries, e)
		sink.Send(progress.Infof("profile %s: %s (sha256 %s)", e.Platform, p.File, e.SHA256))
	}
	b, err := json.MarshalIndent(struct {
		Profiles []lock.Profile `json:"profiles"`
	}{entries}, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(b))
	if !f.write {
		if f.baseURL == "" {
			sink.Send(progress.Infof("serve the tarballs over https and record them: --url BASE --write (or add the entries above with their url to the lock's \"profiles\")"))
		}
		return nil
	}
	lockFile := lockPath(f.build.lockFile)
	if err := notInterrupted(ctx, "the lock "+lockFile+" (--write)"); err != nil {
		return err
	}
	l, err := lock.Load(lockFile)
	if err != nil {
		return fmt.Errorf("recording the profiles in %s: %w", lockFile, err)
	}
	for i, e := range entries {
		if f.inRepo {
			dst := filepath.Join(filepath.Dir(lockFile), filepath.FromSlash(e.URL))
			if err := copyFile(res.Profiles[i].File, dst); err != nil {
				return fmt.Errorf("recording the profiles in %s: %w", lockFile, err)
			}
		}
		l.SetProfile(e)
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("recording the profiles in %s: %w", lockFile, err)
	}
	if err := l.Write(lockFile); err != nil {
		return err
	}
	if f.inRepo {
		sink.Send(progress.Infof("recorded %d profile(s) in %s, files under %s: commit them together", len(entries), lockFile,
			filepath.Join(filepath.Dir(lockFile), lock.ProfilesDir)))
		return nil
	}
	sink.Send(progress.Infof("recorded %d profile(s) in %s: serve each file at its url before building", len(entries), lockFile))
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
