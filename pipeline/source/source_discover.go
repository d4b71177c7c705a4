package source

// This file is engineer E's (pipeline/upstream) addition: verifying a release the lock does
// not pin yet. It reuses the fetcher's download, retry and PGP code.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// FetchNew downloads a release whose checksum is not known yet (c.SHA256 is ignored: the
// update check derived c's URLs for a new version) and returns its SHA-256. When the lock
// pins a signature, the new tarball must carry a valid signature by one of the pinned
// fingerprints, or FetchNew fails and nothing is cached; that signature is what vouches for
// the checksum that goes into the lock. Without a pinned signature the checksum rests on the
// HTTPS download alone, and the returned Verified says so (Signed false).
//
// A verified tarball and its signature are placed in the cache like Fetch does, so the build
// that follows the lock update needs no second download.
func (f *Fetcher) FetchNew(ctx context.Context, c lock.Component) (Verified, error) {
	v, err := f.fetchNew(ctx, c)
	if err != nil {
		return Verified{}, fmt.Errorf("source %s %s (new release): %w", c.Name, c.Version, err)
	}
	return v, nil
}

func (f *Fetcher) fetchNew(ctx context.Context, c lock.Component) (Verified, error) {
	if f.initErr != nil {
		return Verified{}, f.initErr
	}
	name, sigName, err := fileNames(c)
	if err != nil {
		return Verified{}, err
	}

	// The download keeps its own name inside a private temporary directory, so messages
	// about it (a signature that does not verify) name the real file.
	tmpSub, err := f.scratchDir(".new-*")
	if err != nil {
		return Verified{}, err
	}
	defer os.RemoveAll(tmpSub)
	tmpName := filepath.Join(tmpSub, name)

	src := f.fileURL(c.URL)
	sum, err := f.downloadHashed(ctx, src, tmpName)
	if err != nil {
		return Verified{}, err
	}
	v := Verified{Name: c.Name, Version: c.Version, SHA256: sum, URL: src, Unsigned: c.Unsigned}
	sig, err := f.verifyNew(ctx, c, tmpName, sigName, &v)
	if err != nil {
		return Verified{}, err
	}
	// Unpacked only after the signature vouched for the bytes (or, unsigned, after the
	// download): the policy and its limits decide before anything is cached.
	pr, err := f.prepare(ctx, c, tmpName, name, src)
	if err != nil {
		return Verified{}, err
	}
	v.Prepared, v.Top = pr.path, pr.top
	if err := f.cacheNew(&v, tmpName, name, sig, sigName); err != nil {
		return Verified{}, err
	}
	f.sink.Send(progress.Detailf("%s", v.String()))
	return v, nil
}

// downloadHashed downloads src to the file dst, with retries, and returns its SHA-256.
func (f *Fetcher) downloadHashed(ctx context.Context, src, dst string) (string, error) {
	var sum string
	err := f.retry(ctx, src, func() error {
		fh, err := os.Create(dst)
		if err != nil {
			return permanent(fmt.Errorf("creating temporary file: %w", err))
		}
		h := sha256.New()
		_, err = f.fetchTo(ctx, src, io.MultiWriter(fh, h), f.maxSize)
		if cerr := fh.Close(); err == nil && cerr != nil {
			err = permanent(fmt.Errorf("writing temporary file: %w", cerr))
		}
		if err != nil {
			return err
		}
		sum = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	var pe *permanentError
	if errors.As(err, &pe) {
		err = pe.err
	}
	return sum, err
}

// verifyNew fetches the signature the lock pins for c (none: nil) and verifies the tarball
// at path with it, recording the signer in v.
func (f *Fetcher) verifyNew(ctx context.Context, c lock.Component, path, sigName string, v *Verified) ([]byte, error) {
	if c.Signature == nil {
		return nil, nil
	}
	sig, res, err := f.fetchVerified(ctx, c, path, sigName)
	if err != nil {
		return nil, err
	}
	v.Signed, v.SignedBy, v.SignedAt, v.SignerVendored = true, res.fingerprint, res.created, res.vendored
	return sig, nil
}

// cacheNew moves the verified tarball tmpName into the cache as name, with its signature sig
// (when there is one) as sigName, and sets v.Path.
func (f *Fetcher) cacheNew(v *Verified, tmpName, name string, sig []byte, sigName string) error {
	dir := filepath.Join(f.cacheDir, "sha256", v.SHA256)
	v.Path = filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating cache directory: %w", err)
	}
	if err := os.Chmod(tmpName, 0o444); err != nil {
		return err
	}
	if err := os.Rename(tmpName, v.Path); err != nil {
		return fmt.Errorf("moving %s into the cache: %w", name, err)
	}
	if sig != nil {
		if err := writeFileAtomic(dir, filepath.Join(dir, sigName), sig); err != nil {
			return fmt.Errorf("caching signature: %w", err)
		}
	}
	return nil
}
