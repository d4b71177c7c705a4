package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// checkUpdateOutputs checks, before anything is fetched, every path check-updates --write
// may write: the lock (replaced in place, never through a symbolic link), the keys directory
// keys are vendored into (not a symbolic link), and --pr-body (not a link, not the lock or a
// key file, in an existing writable directory). So exit status 1 keeps meaning that nothing
// was written, and a body cannot overwrite what it describes.
func checkUpdateOutputs(run *upstream.Run, prBody string) error {
	write, lockFile, keysDir := run.Write, run.LockFile, run.ResolvedKeysDir()
	if prBody != "" && !write {
		return usageErrorf("--pr-body needs --write (the body lists what --write verified)")
	}
	if !write {
		// Without --write, --keys is only read: it must be there.
		if run.KeysDir != "" {
			return checkDirFlag("--keys", run.KeysDir, "of reviewed signer keys (<FINGERPRINT>.asc)")
		}
		return nil
	}
	if err := safeio.CheckReplaceable(lockFile); err != nil {
		return usageErrorf("--lock with --write: %v", err)
	}
	flag := "--keys"
	if run.KeysDir == "" {
		flag = "the keys directory beside --lock"
	}
	if err := safeio.CheckOutputDir(keysDir); err != nil {
		return usageErrorf("%s: %v (signer keys are vendored there)", flag, err)
	}
	if prBody == "" {
		return nil
	}
	if err := safeio.CheckReplaceable(prBody); err != nil {
		return usageErrorf("--pr-body: %v", err)
	}
	if err := notTheLockOrAKey(prBody, lockFile, keysDir); err != nil {
		return usageErrorf("--pr-body %s: %v: give a file of its own (e.g. $RUNNER_TEMP/body.md)", prBody, err)
	}
	dir := filepath.Dir(prBody)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("--pr-body %s: directory %s does not exist: create it (mkdir -p %s) or choose another path", prBody, dir, dir)
	case err != nil:
		return usageErrorf("--pr-body %s: %v", prBody, err)
	case !fi.IsDir():
		return usageErrorf("--pr-body %s: %s is not a directory", prBody, dir)
	}
	if err := syscall.Access(dir, 0o2|0o1); err != nil { // W_OK|X_OK, as this user
		return usageErrorf("--pr-body %s: directory %s is not writable by this user: %v", prBody, dir, err)
	}
	return nil
}

// notTheLockOrAKey refuses a body path that is, or resolves to, the lock or a file of the
// keys directory (by name, through links in its directory, or as a hard link).
func notTheLockOrAKey(body, lockFile, keysDir string) error {
	bodyFI, bodyErr := os.Stat(body)
	if fi, err := os.Stat(lockFile); err == nil && bodyErr == nil && os.SameFile(fi, bodyFI) {
		return errors.New("is the lock")
	}
	real := resolved(body)
	if real == resolved(lockFile) {
		return errors.New("is the lock")
	}
	keys := resolved(keysDir)
	if filepath.Dir(real) == keys {
		return fmt.Errorf("is in the keys directory %s", keysDir)
	}
	if bodyErr != nil {
		return nil
	}
	ents, _ := os.ReadDir(keysDir)
	for _, e := range ents {
		if fi, err := os.Stat(filepath.Join(keysDir, e.Name())); err == nil && os.SameFile(fi, bodyFI) {
			return fmt.Errorf("is the key file %s", filepath.Join(keysDir, e.Name()))
		}
	}
	return nil
}

// resolved is file's absolute path with the links of its directory resolved (the file
// itself may not exist yet).
func resolved(file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return filepath.Clean(file)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// notInterrupted is checked right before a command writes a file a person named (--output,
// --json, --markdown, -o, --pr-body, the lock and profile files): a signal or deadline that
// came while the command worked (much of which takes no context: rendering, converting an
// image) means nothing is written, and the error says which file was not.
func notInterrupted(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %s was not written: %w", what, context.Cause(ctx))
	}
	return nil
}
