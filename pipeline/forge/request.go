package forge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// Request is one build, as plain values.
type Request struct {
	// Lock is the lock to build; when nil, LockFile is loaded (lock.DefaultPath falls back
	// to the lock built into the program when the file is absent). LockFile "" is
	// lock.DefaultPath, or the shipped lock TLS and Zlib choose; a LockFile given is the lock
	// used, even when it names lock.DefaultPath.
	Lock     *lock.Lock
	LockFile string
	// TLS and Zlib are the libraries asked for, as flags spell them ("aws-lc", "zlib-ng";
	// "" is the lock's). Without a LockFile of its own they choose the shipped lock that
	// has them (lock.Builtins); with one, the lock must have them.
	TLS, Zlib string
	// BuilderImage and RuntimeImage override the lock's images ("REF" or "REF@sha256:...").
	BuilderImage, RuntimeImage string
	// Engine is the name of the engine the request is for (engine.Engine.Name, as --engine
	// spells it): the host engine builds for one platform, on this machine. "" names none;
	// Run refuses an engine other than the one named.
	Engine string

	Platforms []plan.Platform // each once (plan.ParsePlatforms); empty means plan.DefaultPlatform
	CPU       string          // -march level; "" is the platform's default
	Jobs      int             // parallel compile jobs; 0 is one per CPU
	Optimize  string          // auto, none, lto or pgo (plan.OptimizeModes); "" is plan.DefaultOptimize
	Modules   []string        // nil is the default module set
	Mirror    string          // fetch every file as Mirror/<file name>
	// Keyservers replace the servers that signer keys which are not vendored are fetched
	// from (pipeline/source's defaults); nil keeps them.
	Keyservers []string
	// CacheDir holds, under sources/, the verified sources; "" is pipeline/source's default
	// (the user's cache directory). The host engine keeps its stages beside them (the
	// command gives it the same directory).
	CacheDir string
	// MaxSourceSize caps each download in bytes; 0 is pipeline/source's DefaultMaxSize.
	MaxSourceSize int64
	// SourceTimeout fails a download that moves less than source.MinProgress bytes in this
	// long, and a git fetch whose transfer does (git's low-speed limit); 0 is
	// source.DefaultStallTimeout.
	SourceTimeout time.Duration
	// FetchTimeout is one deadline for fetching, checking and unpacking every source; 0 is
	// DefaultFetchTimeout.
	FetchTimeout time.Duration

	// ProfileDir: instead of an image, train the pgo plan of each platform and write its
	// profile into this directory (see RecordProfile); Result.Profiles says what to record.
	ProfileDir string

	Tree   string // write the install tree here (new or empty directory)
	Bundle bool   // with Tree: add the bare-metal files
	Output string // write the image here: OCI layout directory, or a tarball if it ends in .tar

	Repo       string   // repository to publish to (and to name Output's image)
	Tags       []string // tags to move; empty is the default tags
	Push       bool     // push by digest, smoke-test that digest, then move the tags
	DigestOnly bool     // with Push: move no tag
	Latest     bool     // with Push and the default tags: also move the channel and latest
	Ref        string   // the git ref built (GITHUB_REF), for the default tags (image.Tags)
	NoSmoke    bool     // skip the smoke tests (never with Push)
	Insecure   bool     // allow plain HTTP to registries not on loopback
	// RegistryTimeout fails a registry request (the runtime image's pull, the push, the
	// signatures) that moves less than 1 KiB in this long; 0 is image.DefaultStallTimeout.
	RegistryTimeout time.Duration
	// SignKey: with Push, sign each pushed image and index with this PEM private key
	// (cosign's encrypted key with COSIGN_PASSWORD, or an unencrypted one) and attach its SBOM
	// and provenance as signed attestations, cosign's way (pipeline/sign), before any tag moves.
	SignKey  string
	Revision string // source revision recorded in the image's annotations and the provenance
	// Origin is where the build runs from: the repository the image's source label and the
	// provenance name, and the provenance's builder. The command reads it once, where it
	// runs (ci); the zero Origin names no repository.
	Origin Origin
	// Advisories is the reviewed advisories snapshot; "" is pipeline/advisory's default file,
	// or the copy built into the program outside a checkout.
	Advisories string
	// AcceptAdvisories acknowledges, by ID, the high or critical advisories with a fixed
	// release that would otherwise refuse a Push (--accept-advisory).
	AcceptAdvisories []string
}

// Origin is where a build runs from, read by the command (the GitHub Actions workflow's
// repository, --source-repository, or the checkout's origin remote), never a constant: a
// fork's image and provenance name the fork.
type Origin struct {
	// Repository is the https URL of the repository built (image.CheckSource's rule):
	// org.opencontainers.image.source and the provenance's source; "" leaves both out.
	Repository string
	// BuilderID is the provenance's runDetails.builder.id (the workflow that ran, in GitHub
	// Actions); "" is pipeline/sign's builder that names no repository.
	BuilderID string
	// Ref is the git ref built, as the provenance names the revision (git+REPOSITORY@REF);
	// "" names the revision by its commit alone. Request.Ref, which decides the tags, is
	// apart: a build in Actions knows its ref without moving tags by it.
	Ref string
}

// WantsImage: an image is assembled unless the only output asked for is the install tree.
func (r Request) WantsImage() bool {
	if r.ProfileDir != "" {
		return false
	}
	return r.Push || r.Output != "" || r.Repo != "" || r.Tree == ""
}

func (r Request) platforms() []plan.Platform {
	if len(r.Platforms) == 0 {
		return []plan.Platform{plan.DefaultPlatform}
	}
	return r.Platforms
}

// Result is what a build did.
type Result struct {
	Platforms []PlatformResult
	// Published is the digest the tags point at (an index for several platforms); nil
	// unless the request pushed.
	Published *image.Published
	// Repo is the repository published to.
	Repo  string
	Steps []Step
	// Warnings are what the build warned about that a person should act on (a superseded
	// or end-of-life branch), for annotations.
	Warnings []string
	// Profiles are the profiles a ProfileDir request trained and wrote (URL empty: where the
	// file will be served is the caller's to say), with their files.
	Profiles []RecordedProfile
}

// RecordedProfile is one trained profile: its lock entry (without URL) and its file.
type RecordedProfile struct {
	lock.Profile
	File string
}

// PlatformResult is one platform's build.
type PlatformResult struct {
	Platform string
	CPU      string
	Stages   []engine.Stage // as the engine reported them (nil when it cannot tell)
	Digest   string         // the image's digest; "" when no image was assembled
	Size     image.Size
	Smoke    *smoke.Report // nil when not smoke-tested
}

// Step is one timed step of the build ("fetch", "build linux/amd64", ...).
type Step struct {
	Name     string
	Duration time.Duration
}

// LoadLock reads the lock file; the default path falls back to the lock built into the
// program (builtin true), so the command also works outside a checkout. A lock that does not
// load is a *RequestError for every command: the input named on the command line is what
// needs fixing, and nothing has run.
func LoadLock(file string) (l *lock.Lock, builtin bool, err error) {
	l, err = lock.Load(file)
	if err == nil {
		return l, false, nil
	}
	if b, ok := lock.BuiltinAt(file); ok && errors.Is(err, fs.ErrNotExist) {
		return b.Lock(), true, nil
	}
	return nil, false, &RequestError{Err: fmt.Errorf("loading lock %s (nothing was built): %w", file, err)}
}

// checkNewDir is nil when dir is empty, or absent in a writable directory: the only
// directories a build writes an install tree into. It runs before anything is fetched, so a
// typo in the path costs a second, not a build.
func checkNewDir(dir string) error {
	abs, err := engine.EmptyDir(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err == nil {
		return writable(abs)
	}
	return parentWritable(abs)
}

// checkOutputPath is nil when path does not exist and its directory does and is writable:
// where a build writes --output (a tarball or an OCI layout directory, and PATH.spdx.json).
func checkOutputPath(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%q: %w", path, err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return fmt.Errorf("%s exists: choose a new path or remove it", abs)
	}
	return parentWritable(abs)
}

// checkProfileDir is nil when dir is a writable directory, or would be made (as profile.go
// makes it, with its parents) in one: where pgo-profile writes its tarballs.
func checkProfileDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%q: %w", dir, err)
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) && filepath.Dir(p) != p:
			continue // its parent says why (absent, or a file)
		case err != nil:
			return err
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory: give a directory for the profile tarballs", p)
		}
		return writable(p)
	}
}

// apart refuses an install tree and an image output that name one path, or one inside the
// other: each is written whole by its own step (the tree must be new or empty, the output
// new), so the second would write into, or over, the first. Paths are compared absolute
// and cleaned, through the symbolic links of the directories that exist.
func apart(tree, output string) error {
	t, o := realPath(tree), realPath(output)
	switch {
	case t == o:
		return fmt.Errorf("--tree %s and --output %s name one path (%s): give each its own (e.g. --tree out/tree --output out/nginx.tar)", tree, output, t)
	case strings.HasPrefix(o, t+string(filepath.Separator)):
		return fmt.Errorf("--output %s is inside --tree %s: the image would be written into the install tree; give it a path outside", output, tree)
	case strings.HasPrefix(t, o+string(filepath.Separator)):
		return fmt.Errorf("--tree %s is inside --output %s: give the install tree a path outside the image output", tree, output)
	}
	return nil
}

// realPath is p absolute and clean, with the symbolic links of its longest existing prefix
// resolved.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	for dir, rest := abs, ""; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

func parentWritable(abs string) error {
	parent := filepath.Dir(abs)
	fi, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist: create it (mkdir -p %s) or choose another path", parent, parent)
	case err != nil:
		return fmt.Errorf("directory %s: %w", parent, err)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", parent)
	}
	return writable(parent)
}

// writable asks the kernel (access(2), as this user) rather than guessing from mode bits.
func writable(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("directory %s is not writable by this user (uid %d): %w", dir, os.Getuid(), err)
	}
	return nil
}
