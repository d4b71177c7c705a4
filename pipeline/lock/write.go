package lock

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// WriteKeyFile writes a signer key as dir/<fpr>.asc (safeio.ReplaceFile), creating dir when it is
// absent; dir must not be a symbolic link (safeio.CheckOutputDir) and fpr must be a fingerprint, so
// the file is in dir.
func WriteKeyFile(dir, fpr string, armored []byte) (string, error) {
	if !IsFingerprint(fpr) {
		return "", fmt.Errorf("%q is not a key fingerprint", fpr)
	}
	if err := safeio.CheckOutputDir(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(dir, fpr+".asc")
	return file, safeio.ReplaceFile(file, armored, 0o644)
}
