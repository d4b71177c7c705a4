// Package toolbox holds the small helpers several packages of the pipeline need the same
// way: the end of a log for an error message, a free loopback port, a process's /proc
// files, a file lock shared between processes, decoding a compressed HTTP body, and a
// file's SHA-256. Each is a few lines; they live here so
// that every package truncates a log, finds a port or takes a lock alike.
package toolbox

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// Tail is the end of s for an error message: s without surrounding white space, cut to its
// last n bytes behind "..." when longer.
func Tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// TailLines is the last n lines of s (trailing newlines dropped): a failed command's output,
// where whole lines read better than a cut one.
func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FileTail is the last n lines of the file at path, read as it streams (a build log can be
// large), or "" when it cannot be read: it only ever decorates another error.
func FileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// FreePort is a TCP port on 127.0.0.1 that is free now. Whoever binds it later may lose a
// race for it; callers that can retry do.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts is n distinct TCP ports on 127.0.0.1 that are free now (all are held until the
// last is found, so none repeats).
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free TCP port on 127.0.0.1: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Self is the pid that names the calling process in ProcStatus and MountInfo.
const Self = 0

func procFile(pid int, name string) (string, error) {
	p := "self"
	if pid != Self {
		p = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + p + "/" + name)
	return string(b), err
}

// ProcStatus is /proc/PID/status (Self: the caller's). The error names the file; a process
// that has exited gives an fs.ErrNotExist one.
func ProcStatus(pid int) (string, error) { return procFile(pid, "status") }

// MountInfo is /proc/PID/mountinfo (Self: the caller's): the mounts as that process's mount
// namespace sees them.
func MountInfo(pid int) (string, error) { return procFile(pid, "mountinfo") }

// StatusField is the value of one "Key:\tvalue" line of a /proc/PID/status text, without
// surrounding white space.
func StatusField(status, key string) (string, bool) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// Lock takes an exclusive flock on path (created if missing), shared with every process
// that locks the same file, and returns the function that releases it. It waits while
// another holder has it: blocked in the kernel when ctx can never be cancelled, otherwise
// polling so that ctx's end ends the wait with ctx's error.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	unlock = func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }
	if ctx.Done() == nil {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		return unlock, nil
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return unlock, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Decode undoes an HTTP Content-Encoding the pipeline's nginx serves: gzip, br (brotli) or
// zstd. The smoke checks and the benchmark check a compressed body against the plain one
// the same way.
func Decode(encoding string, body []byte) ([]byte, error) {
	switch encoding {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "br":
		return io.ReadAll(brotli.NewReader(bytes.NewReader(body)))
	case "zstd":
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(body, nil)
	}
	return nil, fmt.Errorf("Content-Encoding %q is none of gzip, br and zstd", encoding)
}

// FileSHA256 is the hex SHA-256 of the file's content: what the lock pins a download or a
// recorded profile by, computed one way wherever a file is checked against it.
func FileSHA256(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", file, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
