package source

import (
	"errors"
	"fmt"
	"io"

	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// localError is a failure of this machine (a full disk, a permission, a file-size limit)
// while writing into the cache: said as such, with the path, never as a fault of a source or
// a server (issue 47: a full disk was reported as a hostile archive), never retried, and
// never a reason to remove a cached file that matched its pin.
type localError struct {
	op, path string
	err      error
}

func (e *localError) Error() string {
	return fmt.Sprintf("%s %s on this machine: %v (free space there or fix its permissions, and run again; the sources were not judged)", e.op, e.path, e.err)
}

func (e *localError) Unwrap() error   { return e.err }
func (e *localError) Retryable() bool { return false }

func local(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &localError{op: op, path: path, err: err}
}

// localWriter is a file of the cache being written: it keeps the first write error, to tell
// this machine's fault from the server's when a copy into it fails.
type localWriter struct {
	w    io.Writer
	path string
	err  error
}

func (w *localWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = local("writing", w.path, err)
	}
	return n, err
}

// refused reports whether a cached file's check failed because of the file itself (a refusal
// of its archive, or files that do not hash to the pinned tree): only then is it removed.
func refused(err error) bool {
	var ue *unpack.Error
	var te *TreeError
	return errors.As(err, &ue) || errors.As(err, &te)
}
