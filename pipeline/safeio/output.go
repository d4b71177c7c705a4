package safeio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// What the commands write into a checkout (the lock, keys/<FPR>.asc, a pull request body)
// goes to the file named and to nothing else: a symbolic link in its place is refused, never
// followed and never replaced, and a file is replaced by renaming a new file of the same
// directory over it, so nothing is written outside that directory whatever happens to the
// path meanwhile. The file keeps its permission bits.

// linkError is an output path that is a symbolic link.
type linkError struct{ File string }

func (e *linkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link: it is not written through (name the file itself)", e.File)
}

// CheckReplaceable is nil when file is absent or a regular file that is not a symbolic link.
func CheckReplaceable(file string) error {
	return checkOutput(file, func(fi fs.FileInfo) error {
		if !fi.Mode().IsRegular() {
			return &NotRegularError{file, fi.Mode()}
		}
		return nil
	})
}

// CheckOutputDir is nil when dir is absent or a directory that is not a symbolic link: the
// keys directory a key is written into.
func CheckOutputDir(dir string) error {
	return checkOutput(dir, func(fi fs.FileInfo) error {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	})
}

// checkOutput is nil when p is absent, refuses a symbolic link (nothing is written through
// one), and otherwise asks kind whether p is what is written there.
func checkOutput(p string, kind func(fs.FileInfo) error) error {
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return &linkError{p}
	}
	return kind(fi)
}

// ReplaceFile writes data as file (CheckReplaceable): into a new file of file's directory,
// renamed over it. An existing file keeps its permission bits; a new one gets perm.
func ReplaceFile(file string, data []byte, perm fs.FileMode) error {
	if err := CheckReplaceable(file); err != nil {
		return err
	}
	if fi, err := os.Lstat(file); err == nil {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm) // CreateTemp makes 0600
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
