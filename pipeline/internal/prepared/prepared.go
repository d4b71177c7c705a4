// Package prepared is the contract between the source fetcher, which writes the archives
// the build stages read, and every engine, which checks each one before a stage reads it:
// an archive is kept under <cache>/prepared/ and named after its own SHA-256
// (<hex>.tar.gz), so that the check can tell the file is still what was written. A leaf,
// so that the engines do not import the fetcher to check its output.
package prepared

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
)

// dir is the directory, below a fetcher's cache, that holds the prepared archives.
const dir = "prepared"

// Path is where an archive whose bytes hash to sum is kept below cacheDir.
func Path(cacheDir string, sum []byte) string {
	return filepath.Join(cacheDir, dir, hex.EncodeToString(sum)+".tar.gz")
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Check checks that path is a prepared archive (named <sha256>.tar.gz) and that its bytes
// still hash to its name: what every engine checks before a stage reads it, since a file in
// a shared cache can change between the fetch and the build.
func Check(path string) error {
	base := filepath.Base(path)
	want, ok := strings.CutSuffix(base, ".tar.gz")
	if !ok || !hexSHA256.MatchString(want) {
		return fmt.Errorf("%s is not an archive pipeline/source prepared (<sha256>.tar.gz under %s/): a stage reads only the files unpacked and checked by pipeline/unpack, never a downloaded archive; fetch it with pipeline/source", path, dir)
	}
	got, err := toolbox.FileSHA256(path)
	if err != nil {
		return fmt.Errorf("reading source %s: %w", path, err)
	}
	if got != want {
		return fmt.Errorf("source %s has sha256 %s, but was written with sha256 %s: the file is corrupt or tampered with; delete it and fetch again", path, got, want)
	}
	return nil
}
