package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// PrivateSource is how a stage reads its source on either engine: CheckSources hashed every
// prepared archive once, before the first stage, but a stage runs minutes later (nginx's
// last) and the archive's path is in a cache directory. So the archive is copied into dir
// (made here, mode 0700, where only this user can reach it), hashed as it is copied, and the
// copy is used only when its digest is the one the archive is named after, the digest the
// check saw; an archive replaced in between fails naming the file. The copy keeps the
// archive's base name, permission bits and modification time: the Dagger engine keys a
// stage by the uploaded file's content and mode, so a stage reading the copy is the same
// cache entry as one that read the archive.
func PrivateSource(dir, src string) (string, error) {
	want, ok := strings.CutSuffix(filepath.Base(src), ".tar.gz")
	if !ok {
		return "", fmt.Errorf("source %s is not a prepared archive (<sha256>.tar.gz)", src)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("reading source %s: %w", src, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return "", fmt.Errorf("reading source %s: %w", src, err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copying source %s for the stage: %w", src, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return "", fmt.Errorf("source %s changed after it was checked: its bytes now hash to %s, not %s: the file was replaced while the build ran; nothing of it was compiled; delete it and fetch again", src, got, want)
	}
	if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
		return "", err
	}
	if err := os.Chtimes(dst, fi.ModTime(), fi.ModTime()); err != nil {
		return "", err
	}
	return dst, nil
}
