package forge

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// profileFileName is the name a platform's recorded profile is written under: the arch and
// the start of the training key, so that files of different plans never collide.
func profileFileName(pl plan.Platform, training string) string {
	return fmt.Sprintf("nginx-forge-pgo-%s-%.12s.tar.gz", pl.Arch, training)
}

// recordProfile writes the training stage's output (tree: OUT of pgo-train, holding pgo/)
// as the platform's profile tarball under ProfileDir.
func (b *build) recordProfile(ctx context.Context, t *target, tree string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: the profile for %s was not written to --dir %s: %w", t.plan.Platform, b.req.ProfileDir, err)
	}
	if err := os.MkdirAll(b.req.ProfileDir, 0o755); err != nil {
		return fmt.Errorf("profile directory %s: %w", b.req.ProfileDir, err)
	}
	rec := RecordedProfile{Profile: lock.Profile{Platform: t.plan.Platform.String(), Training: t.plan.TrainingKey}}
	rec.File = filepath.Join(b.req.ProfileDir, profileFileName(t.plan.Platform, t.plan.TrainingKey))
	sum, err := writeProfile(rec.File, tree, time.Unix(t.plan.SourceDateEpoch, 0))
	if err != nil {
		return fmt.Errorf("writing the profile for %s: %w", t.plan.Platform, err)
	}
	rec.SHA256 = sum
	b.res.Profiles = append(b.res.Profiles, rec)
	b.sink.Send(progress.Infof("profile: %s (%s, training %.12s, sha256 %s)", rec.File, rec.Platform, rec.Training, sum))
	return nil
}

// writeProfile writes the pgo/ directory of tree to file as a gzipped tarball that depends on
// the files' contents only (sorted names, root-owned, fixed modes and mtime, no time or name
// in the gzip header), and returns its SHA-256. The counters are mostly zeros: gzip makes
// the file about a sixth of the tar. It refuses a tree without pgo/compiler (not a training's output).
func writeProfile(file, tree string, mtime time.Time) (string, error) {
	if _, err := os.Stat(filepath.Join(tree, "pgo", "compiler")); err != nil {
		return "", fmt.Errorf("%s is not a training's output (no pgo/compiler): %w", tree, err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	// WalkDir visits in lexical order, so the entries' order depends on the names only.
	err := filepath.WalkDir(filepath.Join(tree, "pgo"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel) + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeDir}
		if d.IsDir() {
			return tw.WriteHeader(hdr)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file or directory", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Mode, hdr.Typeflag, hdr.Size = filepath.ToSlash(rel), 0o644, tar.TypeReg, int64(len(b))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}
