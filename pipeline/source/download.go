package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/redirects"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// maxBackoff bounds the wait between two attempts.
const maxBackoff = 30 * time.Second

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Retryable is false: whatever the cause, it was marked as one another try cannot fix.
func (e *permanentError) Retryable() bool { return false }

func permanent(err error) error { return &permanentError{err} }

// SizeError reports a download larger than the cap.
type SizeError struct {
	URL   string
	Limit int64
	Size  int64 // the announced size, or -1 when the body simply ran past the limit
}

func (e *SizeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("%s is %d bytes, over the %d-byte limit on a download", e.URL, e.Size, e.Limit)
	}
	return fmt.Sprintf("%s sent more than the %d-byte limit on a download", e.URL, e.Limit)
}

// cached reports whether the verified file is in the cache. The file is hashed again: a cache
// entry that no longer matches (disk corruption, someone editing it) is removed and fetched
// again rather than used.
func (f *Fetcher) cached(file, want string) (bool, error) {
	got, err := toolbox.FileSHA256(file)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading cached %s: %w", file, err)
	}
	if got != want {
		f.sink.Send(progress.Detailf("cached %s has sha256 %s, not %s: removing it and fetching again", file, got, want))
		if err := os.Remove(file); err != nil {
			return false, fmt.Errorf("removing corrupt cache entry %s: %w", file, err)
		}
		return false, nil
	}
	return true, nil
}

// download fetches src into dst through a temporary file in the cache directory, hashing as
// it writes, and renames it into place only if its SHA-256 is want.
func (f *Fetcher) download(ctx context.Context, src, dst, name string, limit int64, want string) error {
	return f.downloadChecked(ctx, src, dst, name, limit, func(_, got string) error {
		if got != want {
			return &ChecksumError{File: name, URL: src, Want: want, Got: got}
		}
		return nil
	})
}

// downloadChecked is download with the check given: check gets the temporary file and its
// SHA-256, and the file is moved into the cache only when check returns nil.
func (f *Fetcher) downloadChecked(ctx context.Context, src, dst, name string, limit int64, check func(file, sha256 string) error) error {
	tmpDir := filepath.Join(f.cacheDir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return local("creating the cache directory", tmpDir, err)
	}
	cleanTemp(tmpDir)
	var got string
	err := f.retry(ctx, src, func() error {
		tmp, err := os.CreateTemp(tmpDir, ".download-*")
		if err != nil {
			return permanent(local("creating a file in", tmpDir, err))
		}
		// Whatever happens below, the temporary file goes: either it was renamed into the
		// cache (and Remove fails harmlessly) or it must not survive.
		defer os.Remove(tmp.Name())
		h := sha256.New()
		// A write that fails is this machine's (a full disk), not the server's: said so and
		// not retried, where the copy would report it as a body cut short.
		w := &localWriter{w: tmp, path: tmp.Name()}
		n, err := f.fetchTo(ctx, src, io.MultiWriter(w, h), limit)
		if w.err != nil {
			tmp.Close()
			return permanent(w.err)
		}
		if cerr := tmp.Close(); err == nil && cerr != nil {
			err = permanent(local("writing", tmp.Name(), cerr))
		}
		if err != nil {
			return err
		}
		got = hex.EncodeToString(h.Sum(nil))
		if err := check(tmp.Name(), got); err != nil {
			return permanent(err)
		}
		if err := os.Chmod(tmp.Name(), 0o444); err != nil {
			return permanent(local("making read-only", tmp.Name(), err))
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return permanent(local("creating the cache directory", filepath.Dir(dst), err))
		}
		if err := os.Rename(tmp.Name(), dst); err != nil {
			return permanent(local("moving into the cache", dst, err))
		}
		f.sink.Send(progress.Detailf("fetched %s (%d bytes) from %s, verified", name, n, safeio.RedactURL(src)))
		return nil
	})
	var pe *permanentError
	if errors.As(err, &pe) {
		return pe.err
	}
	return err
}

// get fetches a small file into memory, with the same retries.
func (f *Fetcher) get(ctx context.Context, src string, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	err := f.retry(ctx, src, func() error {
		buf.Reset()
		_, err := f.fetchTo(ctx, src, &buf, limit)
		return err
	})
	var pe *permanentError
	if errors.As(err, &pe) {
		return nil, pe.err
	}
	return buf.Bytes(), err
}

// retry runs attempt until it succeeds, fails in a way that is not transient (the one rule,
// netfail.Transient: a host name that does not resolve or a certificate this machine does
// not trust is not tried again), or the retries run out, waiting with exponential backoff
// between attempts.
func (f *Fetcher) retry(ctx context.Context, src string, attempt func() error) error {
	wait := f.backoff
	for i := 0; ; i++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if !netfail.Transient(err) || ctx.Err() != nil {
			return err
		}
		if i >= f.retries {
			return fmt.Errorf("%w (gave up after %d attempts)", err, i+1)
		}
		f.sink.Send(progress.Detailf("fetching %s failed (attempt %d of %d): %v; retrying in %s", safeio.RedactURL(src), i+1, f.retries+1, err, wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (interrupted while waiting to retry: %v)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

// fetchTo does one GET of src into w. Errors that retrying cannot fix are marked permanent.
func (f *Fetcher) fetchTo(ctx context.Context, src string, w io.Writer, limit int64) (int64, error) {
	// A file of the checkout (a PGO profile the lock records by path): read, not downloaded,
	// and checked like any download.
	if file, ok := strings.CutPrefix(src, "file://"); ok {
		fh, err := os.Open(file)
		if err != nil {
			return 0, permanent(fmt.Errorf("reading %s: %w", file, err))
		}
		defer fh.Close()
		n, err := io.Copy(w, io.LimitReader(fh, limit+1))
		if err == nil && n > limit {
			err = permanent(&SizeError{URL: src, Limit: limit, Size: -1})
		}
		return n, err
	}
	// A server that stops sending in mid-body would otherwise hold the build forever (the
	// client has no overall timeout, on purpose), and one that trickles a byte at a time
	// would hold it almost as long: cancel the request when less than minProgress bytes
	// arrived in a stall time (an answer's headers included), and let the retry loop try
	// again. The window restarts only when the floor is met, never on any single byte.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	floor := newFloorTimer(f.stall, minProgress, func(moved int64, silent time.Duration) {
		// A window whose few bytes all came at its start and then nothing (a body cut off
		// in mid-transfer) is a server that stopped, as worth another try as one that sent
		// nothing; bytes spread over the window are a trickle.
		stopped := moved == 0 || silent >= f.stall*3/4
		cancel(&stallError{After: f.stall.String(), Floor: minProgress, Moved: moved, Stopped: stopped})
	})
	defer floor.stop()
	// shown is src for messages: a mirror given with credentials (user:password@) must not
	// print them.
	shown := safeio.RedactURL(src)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return 0, permanent(fmt.Errorf("bad URL %q", shown))
	}
	req.Header.Set("User-Agent", "nginx-forge (+https://github.com/nginx-forge/nginx-forge)")
	resp, err := f.client.Do(req)
	if err != nil {
		if se := (*stallError)(nil); errors.As(context.Cause(ctx), &se) {
			err = se
		}
		if errors.As(err, new(*redirects.LoopError)) {
			return 0, permanent(fmt.Errorf("GET %s: %w", shown, err)) // every try follows the same redirects
		}
		return 0, fmt.Errorf("GET %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := &netfail.HTTPStatusError{What: "GET " + shown, Code: resp.StatusCode}
		if err.Retryable() {
			return 0, err
		}
		return 0, permanent(err)
	}
	if resp.ContentLength > limit {
		return 0, permanent(&SizeError{URL: shown, Limit: limit, Size: resp.ContentLength})
	}
	// Read one byte past the limit to tell "exactly at the limit" from "over it".
	body := &progressReader{r: resp.Body, progress: floor.add}
	n, err := io.Copy(w, io.LimitReader(body, limit+1))
	if err != nil {
		if se := (*stallError)(nil); errors.As(context.Cause(ctx), &se) {
			err = se
		}
		// A body cut short (connection reset, io.ErrUnexpectedEOF against Content-Length) is
		// worth another try.
		return n, fmt.Errorf("GET %s: reading body after %d bytes: %w", shown, n, err)
	}
	if n > limit {
		return n, permanent(&SizeError{URL: shown, Limit: limit, Size: -1})
	}
	return n, nil
}

// progressReader calls progress with the bytes that arrive.
type progressReader struct {
	r        io.Reader
	progress func(n int)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress(n)
	}
	return n, err
}

// floorTimer calls fire (with the bytes of the window) when fewer than floor bytes were added within a window of d: each
// window that meets the floor starts the next one (so a transfer that keeps moving is never
// cut off, however long it takes), and bytes beyond the floor carry no credit over.
type floorTimer struct {
	mu    sync.Mutex
	d     time.Duration
	floor int64
	got   int64     // bytes in the current window
	last  time.Time // when the last bytes came (or the window started)
	t     *time.Timer
}

// newFloorTimer: fire gets the window's bytes and how long nothing had come when it ended.
func newFloorTimer(d time.Duration, floor int64, fire func(moved int64, silent time.Duration)) *floorTimer {
	ft := &floorTimer{d: d, floor: floor, last: time.Now()}
	ft.t = time.AfterFunc(d, func() {
		ft.mu.Lock()
		moved, silent := ft.got, time.Since(ft.last)
		ft.mu.Unlock()
		fire(moved, silent)
	})
	return ft
}

func (ft *floorTimer) add(n int) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.got += int64(n)
	ft.last = time.Now()
	if ft.got >= ft.floor && ft.t.Stop() {
		ft.got = 0
		ft.t.Reset(ft.d)
	}
}

func (ft *floorTimer) stop() { ft.t.Stop() }

// cleanTemp removes temporary downloads left by a process that was killed mid-download. Only
// old ones: a younger one may belong to a build running right now.
func cleanTemp(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// writeFileAtomic writes b to file through a temporary file in dir.
func writeFileAtomic(dir, file string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
