package safeio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckPrivateDir refuses a cache directory another user could change, as ssh refuses a
// key file others can write: the build runs what the cache holds (the prepared source
// archives, the stage outputs it links), so the cache must be owned by the user building
// and writable by no one else. dir itself, when it exists, must be a directory owned by
// this user with no write bit for group or others; each directory above it must be owned by
// this user or root and writable by no one else unless sticky (as /tmp is), or anyone could
// rename the cache away and put their own in its place. A dir that does not exist yet is
// fine (it is made 0755 by this user); its existing ancestors are checked. The error names
// the directory and the command that fixes it.
func CheckPrivateDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("cache directory %q: %w", dir, err)
	}
	uid := os.Geteuid()
	existing := abs
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cache directory %s: %w", abs, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return nil
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("cache directory %s: %w", abs, err)
	}
	if existing == abs {
		if err := checkOwnDir(abs, real, uid); err != nil {
			return err
		}
		real = filepath.Dir(real)
	}
	for p := real; ; p = filepath.Dir(p) {
		if err := checkAncestor(abs, p, uid); err != nil {
			return err
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// checkOwnDir: the cache directory itself (abs as named, real with its links resolved).
func checkOwnDir(abs, real string, uid int) error {
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("cache directory %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cache directory %s is not a directory: remove it or choose another cache directory", abs)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) != uid {
		return fmt.Errorf("cache directory %s is owned by uid %d, not by uid %d who is building: the build would run what another user put there; as that user or root run `chown -R %d %s`, or choose a cache directory of your own",
			abs, st.Uid, uid, uid, abs)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("cache directory %s is writable by group or others (mode %04o): another user could replace what the build runs; run `chmod go-w %s`, or choose a cache directory of your own",
			abs, perm, abs)
	}
	return nil
}

// checkAncestor: a directory above the cache directory (links resolved).
func checkAncestor(abs, p string, uid int) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("cache directory %s: %w", abs, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != 0 && int(st.Uid) != uid {
		return fmt.Errorf("directory %s above the cache directory %s is owned by uid %d, neither root nor uid %d who is building: its owner could put another cache in its place; choose a cache directory under one of your own",
			p, abs, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("directory %s above the cache directory %s is writable by group or others (mode %04o) without the sticky bit: anyone could rename the cache away and put their own in its place; run `chmod go-w %s` (or `chmod +t %s`), or choose a cache directory elsewhere",
			p, abs, fi.Mode().Perm(), p, p)
	}
	return nil
}
