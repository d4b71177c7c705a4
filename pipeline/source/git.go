package source

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// TreeError reports a git source whose files are not the tree the lock pins.
type TreeError struct {
	File   string // file name
	From   string // where it came from
	Commit string // the lock's commit
	Want   string // the lock's tree
	Got    string // the tree of what was received
}

func (e *TreeError) Error() string {
	return fmt.Sprintf("tree mismatch for %s from %s: the lock pins commit %s with tree %s, the files hash to tree %s; "+
		"nothing was used or cached. If the mirror is wrong, fix or drop --mirror; if the lock is wrong, "+
		"take the tree from `git rev-parse %s^{tree}` in a clone of the repository, and review the change",
		e.File, e.From, e.Commit, e.Want, e.Got, e.Commit)
}

// fetchGit is fetch for a component pinned by git commit: the archive of its tree, from the
// mirror (<mirror>/<FileName>) or made from a fetch of the commit, is used and cached only
// when its files hash to the pinned tree (pipeline/gittree). The cache is keyed by the tree.
func (f *Fetcher) fetchGit(ctx context.Context, c lock.Component) (Verified, error) {
	g := c.Git
	name := c.FileName()
	if err := checkFileName(name); err != nil {
		return Verified{}, fmt.Errorf("git repository %q: %w", g.Repository, err)
	}
	tarball := filepath.Join(f.cacheDir, "git-tree", g.Tree, name)
	v := Verified{Name: c.Name, Version: c.Version, Path: tarball, Tree: g.Tree, Commit: g.Commit, Unsigned: c.Unsigned}
	check := func(from string) func(file, sum string) error {
		return func(file, sum string) error {
			pr, err := f.prepare(ctx, c, file, name, from)
			if err != nil {
				return err
			}
			v.SHA256, v.Prepared, v.Top = sum, pr.path, pr.top
			return nil
		}
	}
	if sum, err := toolbox.FileSHA256(tarball); err == nil {
		err := check("the cache")(tarball, sum)
		if err == nil {
			f.sink.Send(progress.Detailf("%s: cached %s", c.Name, tarball))
			return v, nil
		}
		if ctx.Err() != nil {
			return Verified{}, err
		}
		// A fault of this machine (a full disk while unpacking) says nothing about the file,
		// which matched its pin when it was cached: it is kept.
		if !refused(err) {
			return Verified{}, fmt.Errorf("checking the cached %s (kept: it is not at fault): %w", tarball, err)
		}
		f.sink.Send(progress.Detailf("cached %s failed its check (%v): removing it and fetching again", tarball, err))
		if err := os.Remove(tarball); err != nil {
			return Verified{}, fmt.Errorf("removing corrupt cache entry %s: %w", tarball, err)
		}
	}
	if f.mirror != "" {
		src := f.fileURL(name)
		if err := f.downloadChecked(ctx, src, tarball, name, f.maxSize, check(src)); err != nil {
			return Verified{}, err
		}
		v.URL = src
		return v, nil
	}
	if err := f.gitArchive(ctx, c, tarball, check(g.Repository)); err != nil {
		return Verified{}, err
	}
	v.URL = g.Repository
	return v, nil
}

// gitArchive fetches the pinned commit alone (git's own object checks make a fetched commit
// its ID's content), checks its tree ID, archives it as <repository>-<version>/ and moves the
// archive to dst once check passed over it. Attributes are overridden so that no
// export-ignore or export-subst of the repository changes what is archived: the archive is
// the whole tree the lock pins.
func (f *Fetcher) gitArchive(ctx context.Context, c lock.Component, dst string, check func(file, sum string) error) error {
	g := c.Git
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("%s is pinned by git commit and no --mirror is given, so git must fetch it: install git (Debian/Ubuntu: apt-get install git), or give --mirror", c.Name)
	}
	repo, err := f.scratchDir(".git-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(repo)
	shown := safeio.RedactURL(g.Repository)
	run := func(args ...string) (string, error) { return f.git(ctx, repo, shown, false, args...) }
	if _, err := run("init", "-q", "--bare"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, "info", "attributes"), []byte("* -export-ignore -export-subst\n"), 0o644); err != nil {
		return local("writing", filepath.Join(repo, "info", "attributes"), err)
	}
	f.sink.Send(progress.Detailf("%s: fetching commit %s from %s", c.Name, g.Commit, shown))
	if _, err := f.git(ctx, repo, shown, true, "fetch", "--progress", "--depth=1", "--no-tags", g.Repository, g.Commit); err != nil {
		return fmt.Errorf("fetching commit %s of %s: %w", g.Commit, shown, err)
	}
	tree, err := run("rev-parse", "--verify", g.Commit+"^{tree}")
	if err != nil {
		return err
	}
	if tree != g.Tree {
		return &TreeError{File: c.FileName(), From: shown, Commit: g.Commit, Want: g.Tree, Got: tree}
	}
	prefix := strings.TrimSuffix(c.FileName(), "-git.tar.gz") + "/"
	tmp := filepath.Join(repo, "archive.tar.gz")
	if _, err := run("archive", "--format=tar.gz", "--prefix="+prefix, "-o", tmp, g.Commit); err != nil {
		return err
	}
	sum, err := toolbox.FileSHA256(tmp)
	if err != nil {
		return err
	}
	if err := check(tmp, sum); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return local("creating the cache directory", filepath.Dir(dst), err)
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		return local("making read-only", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return local("moving into the cache", dst, err)
	}
	f.sink.Send(progress.Detailf("%s: archived commit %s (tree %s verified)", c.Name, g.Commit, g.Tree))
	return nil
}

// gitError is a git command that failed, with what git said. git reports a network failure
// only in words: Retryable reads them (a timeout, a connection cut off, a server's 5xx).
type gitError struct {
	op     string
	err    error
	stderr string
}

func (e *gitError) Error() string { return "git " + e.op + ": " + e.err.Error() + ": " + e.stderr }
func (e *gitError) Unwrap() error { return e.err }

var gitTransientRE = regexp.MustCompile(`(?i)timed out|connection reset|early EOF|the remote end hung up unexpectedly|returned error: 5[0-9][0-9]|error: 5[0-9][0-9]`)

func (e *gitError) Retryable() bool { return gitTransientRE.MatchString(e.stderr) }
