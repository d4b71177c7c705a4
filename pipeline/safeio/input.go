package safeio

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Every file a command reads because a person named it (--lock, the keys beside it,
// --sign-key, --tls-ca, --config, ...) is opened with OpenInput: only a regular file is
// read, and anything else is refused at once. Reading a named pipe would wait for a writer
// that may never come (and a signal could not end the wait), a device may never end, and a
// directory is a typo.

// NotRegularError is a named input that is not a regular file.
type NotRegularError struct {
	File string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file: give the path of a file", e.File, fileKind(e.Mode))
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO; reading it would wait for a writer)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// OpenInput opens file for reading if, and only if, it is a regular file (symbolic links are
// followed). It looks before it opens (stat), so a device is never opened, and checks again
// what it opened (fstat, through O_NONBLOCK: opening a named pipe put in the way meanwhile
// does not wait for a writer).
func OpenInput(file string) (*os.File, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{file, fi.Mode()}
	}
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{file, fi.Mode()}
	}
	return f, nil
}

// ReadInput reads the regular file at file (OpenInput), at most limit bytes: a larger file
// is an error that names it.
func ReadInput(file string, limit int64) ([]byte, error) {
	f, err := OpenInput(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than the %d bytes expected of it: is it the right file?", file, limit)
	}
	return b, nil
}
