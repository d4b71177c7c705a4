package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// binfmtDir is where the kernel lists the binfmt_misc handlers.
var binfmtDir = "/proc/sys/fs/binfmt_misc"

// checkEmulation is nil for a native plan, and for a cross plan when the kernel runs the
// target's programs through qemu (binfmt_misc, the handler enabled with the F flag, so the
// interpreter is found in containers and build directories alike): nginx's configure runs
// its test programs (see plan.Cross).
func checkEmulation(p *plan.Plan) error {
	if p.Cross == nil {
		return nil
	}
	return EmulationReady(p.Cross.Emulator)
}

// EmulationReady is nil when the binfmt_misc handler name (qemu-aarch64) is registered,
// enabled and has the F flag; otherwise it says what is missing and how to get it.
func EmulationReady(name string) error {
	fix := "run .ci/install-deps as root (it mounts binfmt_misc when it is not mounted and installs qemu-user-static and binfmt-support, which register " + name + "), or `mount -t binfmt_misc binfmt_misc " + binfmtDir + " && apt-get install qemu-user-static binfmt-support && update-binfmts --enable " + name + "`"
	if _, err := os.Stat(filepath.Join(binfmtDir, "register")); err != nil {
		return fmt.Errorf("running %s programs needs binfmt_misc, which is not mounted at %s: %s", strings.TrimPrefix(name, "qemu-"), binfmtDir, fix)
	}
	b, err := os.ReadFile(filepath.Join(binfmtDir, name))
	if err != nil {
		return fmt.Errorf("running %s programs needs the binfmt_misc handler %s, which is not registered: %s", strings.TrimPrefix(name, "qemu-"), name, fix)
	}
	text := string(b)
	if !strings.HasPrefix(text, "enabled\n") {
		return fmt.Errorf("the binfmt_misc handler %s is disabled: %s", name, fix)
	}
	for _, line := range strings.Split(text, "\n") {
		if flags, ok := strings.CutPrefix(line, "flags: "); ok && strings.Contains(flags, "F") {
			return nil
		}
	}
	return fmt.Errorf("the binfmt_misc handler %s lacks the F flag (the interpreter is then looked up in each container's own root, where it is not): register it with F (Debian's qemu-user-static does): %s", name, fix)
}
