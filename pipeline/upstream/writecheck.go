package upstream

import (
	"fmt"
	"path/filepath"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// checkKeyTargets checks every key file UpdateFile would write before the first is written,
// so a refusal writes nothing: the keys directory and each <FPR>.asc in it must not be
// symbolic links (lock.WriteKeyFile never writes through one, nor outside the directory).
func checkKeyTargets(keysDir string, done []Applied) error {
	for _, a := range done {
		if a.NewKey == nil {
			continue
		}
		if err := safeio.CheckOutputDir(keysDir); err != nil {
			return fmt.Errorf("vendoring key %s: %w (nothing was written)", a.NewKey.Fingerprint, err)
		}
		if err := safeio.CheckReplaceable(filepath.Join(keysDir, a.NewKey.Fingerprint+".asc")); err != nil {
			return fmt.Errorf("vendoring key %s: %w (nothing was written)", a.NewKey.Fingerprint, err)
		}
	}
	return nil
}
