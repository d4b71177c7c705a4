package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// What a stage reads is what was checked. engine.CheckSources hashes every prepared archive
// once, before the first stage; nginx's stage runs minutes later, and the archive's path is
// in a cache directory. So a stage never reads that path: engine.PrivateSource copies the
// archive into the stage's own scratch directory, hashing the bytes as it copies them, and
// the stage's SRC is the copy, used only when its digest is the one the archive is named
// after (the digest CheckSources checked). The scratch directory is under the cache
// directory, which checkCacheDir keeps to this user alone, so nothing else can change the copy.
//
// This is also why the stage key may hash the lock's pin (s.Source.Pin()) rather than the
// prepared archive's digest, and must not change (every cached compile would go cold): the
// prepared archive is a deterministic function of the pin (pipeline/source unpacks the
// verified download under the archive policy and packs the files in a fixed order with fixed
// metadata), so for a given pin there is one digest, and the stage compiles exactly the bytes
// with that digest. An archive swapped in after the check either fails here, naming the
// file, or was swapped with the same bytes.

// checkCacheDir refuses a cache another user could change (safeio.CheckPrivateDir): the
// cache directory and the directories the executor keeps in it. Run before anything is
// fetched (Preflight) and again before the first stage (Run, which no preflight precedes).
func (e *Executor) checkCacheDir() error {
	for _, d := range []string{e.cacheDir, filepath.Join(e.cacheDir, "stages"), e.workDir, filepath.Join(e.cacheDir, "locks")} {
		if err := safeio.CheckPrivateDir(d); err != nil {
			return fmt.Errorf("host engine cache (--cache): %w", err)
		}
	}
	return nil
}

// A cached stage output records what it holds: manifestFile, written when the stage is
// stored, lists every file under out/ (path, mode, SHA-256 or link target), and a reuse
// first checks out/ against it. A mismatch (bytes appended to a cached libz.a) rebuilds the
// stage and says which file differs. An entry stored before manifests were written has none:
// it is trusted once, when the cache directory passed checkCacheDir, and its manifest is
// written then, so the cache stays warm and every later reuse is checked.
const manifestFile = "manifest.json"

// manifestEntry is one file, directory or link under out/.
type manifestEntry struct {
	Path   string `json:"path"`
	Mode   string `json:"mode"`
	SHA256 string `json:"sha256,omitempty"`
	Link   string `json:"link,omitempty"`
}

// outManifest lists the tree under out, in WalkDir's (lexical) order.
func outManifest(out string) ([]manifestEntry, error) {
	var list []manifestEntry
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(out, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := manifestEntry{Path: filepath.ToSlash(rel), Mode: info.Mode().String()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if m.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if m.SHA256, err = fileSum(p); err != nil {
				return err
			}
		case !info.IsDir():
			return fmt.Errorf("%s is %s, not a file, directory or link", p, info.Mode().Type())
		}
		list = append(list, m)
		return nil
	})
	return list, err
}

func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeManifest writes entry's manifest of its out/ (entry: a stage's directory in the cache
// or its scratch directory before the commit).
func writeManifest(entry string) error {
	list, err := outManifest(filepath.Join(entry, "out"))
	if err != nil {
		return fmt.Errorf("listing the stage's output: %w", err)
	}
	b, err := json.MarshalIndent(list, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(entry, manifestFile), b, 0o444)
}

// errNoManifest is a cache entry stored before manifests were written.
var errNoManifest = errors.New("no manifest")

// checkManifest compares entry's out/ with its manifest; the error names the first file
// that differs.
func checkManifest(entry string) error {
	b, err := os.ReadFile(filepath.Join(entry, manifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return errNoManifest
	}
	if err != nil {
		return err
	}
	var want []manifestEntry
	if err := json.Unmarshal(b, &want); err != nil {
		return fmt.Errorf("its manifest %s is not readable: %w", filepath.Join(entry, manifestFile), err)
	}
	got, err := outManifest(filepath.Join(entry, "out"))
	if err != nil {
		return fmt.Errorf("reading its output: %w", err)
	}
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(got):
			return fmt.Errorf("%s is missing from its output", want[i].Path)
		case i >= len(want):
			return fmt.Errorf("%s is in its output but not in its manifest", got[i].Path)
		case got[i].Path != want[i].Path:
			return fmt.Errorf("its output holds %s where its manifest lists %s", got[i].Path, want[i].Path)
		case got[i] != want[i]:
			return fmt.Errorf("%s differs from its manifest (mode %s sha256 %s link %q, stored as mode %s sha256 %s link %q)",
				got[i].Path, got[i].Mode, got[i].SHA256, got[i].Link, want[i].Mode, want[i].SHA256, want[i].Link)
		}
	}
	return nil
}

// reuse returns the cached entry final of stage when it can be reused: complete, and its
// output what its manifest lists (an entry without one gets its manifest now, see
// manifestFile). A tampered entry is moved out of the cache, with a note saying why, and
// the stage is built again.
func (e *Executor) reuse(stage, key, final string) (meta, bool) {
	m, ok := readMeta(final)
	if !ok {
		return m, false
	}
	err := checkManifest(final)
	if errors.Is(err, errNoManifest) {
		if err := writeManifest(final); err != nil {
			e.sink.Send(progress.Detailf("stage %s: cached output %s has no manifest and none could be written (%v): building it again", stage, final, err))
			e.discard(final, key, stage)
			return m, false
		}
		e.sink.Send(progress.Detailf("stage %s: cached output %s was stored without a manifest: its manifest is written now, and checked on every later reuse", stage, final))
		return m, true
	}
	if err != nil {
		e.sink.Send(progress.Warningf("stage %s: cached output %s does not match what was stored: %v: building it again", stage, final, err))
		e.discard(final, key, stage)
		return m, false
	}
	return m, true
}

// discard moves a cache entry that may not be reused out of the cache (into the scratch
// area, then removes it), so the stage's rebuild can be stored under its key.
func (e *Executor) discard(final, key, stage string) {
	if err := os.MkdirAll(e.workDir, 0o755); err != nil {
		return
	}
	aside, err := os.MkdirTemp(e.workDir, key[:16]+"-"+stage+"-discarded-")
	if err != nil {
		return
	}
	dst := filepath.Join(aside, "entry")
	if os.Rename(final, dst) == nil {
		_ = filepath.WalkDir(aside, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755) // a tampered entry may hold directories made read-only
			}
			return nil
		})
	}
	os.RemoveAll(aside)
}
