package smoke

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// elfMachines are the ELF machines of the architectures the plan builds for.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// archFlags are the compile flags each architecture's binary must have been built with
// (pipeline/plan/flags.go), as they appear in its configure arguments (--with-cc-opt, which
// nginx -V prints from the binary): the CPU level's -march and the control-flow hardening
// that exists only on that architecture. A binary cross-compiled with the other
// architecture's flags, or with none, fails here even when it runs.
var archFlags = map[string][]string{
	"amd64": {"-march=", "-fcf-protection"},
	"arm64": {"-march=", "-mbranch-protection=standard"},
}

var reCCOpt = regexp.MustCompile(`--with-cc-opt='?([^'\n]*)`)

// checkArch: the binary is an ELF executable for the expected architecture (its machine,
// 64-bit little-endian) and its configure arguments carry that architecture's flags.
func checkArch(ctx context.Context, r *runner) (Status, string) {
	f, err := r.openBinary()
	if err != nil {
		if errors.Is(err, errNoRootFS) {
			return Skip, err.Error()
		}
		return Fail, err.Error()
	}
	machine, class, order := f.Machine, f.Class, f.ByteOrder
	f.Close()
	arch := ""
	for a, m := range elfMachines {
		if m == machine {
			arch = a
		}
	}
	if arch == "" || class != elf.ELFCLASS64 || order != binary.LittleEndian {
		return Fail, fmt.Sprintf("ELF machine %s (%s): not a %s binary", machine, class, plan.SupportedList())
	}
	if want := r.o.Expect.Arch; want != "" && want != arch {
		return Fail, fmt.Sprintf("ELF machine %s: a %s binary in a %s image", machine, arch, want)
	}
	p, err := resolveIn(r.t.RootFS(), r.o.Binary)
	if err != nil {
		return Fail, err.Error()
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return Fail, err.Error()
	}
	m := reCCOpt.FindSubmatch(data)
	if m == nil {
		return Fail, fmt.Sprintf("ELF machine %s; no --with-cc-opt in the binary's configure arguments", machine)
	}
	opts := strings.Fields(string(m[1]))
	var missing []string
	for _, want := range archFlags[arch] {
		if !slices.ContainsFunc(opts, func(o string) bool { return strings.HasPrefix(o, want) }) {
			missing = append(missing, want)
		}
	}
	march := ""
	for _, o := range opts {
		if strings.HasPrefix(o, "-march=") {
			march = o
		}
	}
	if len(missing) > 0 {
		return Fail, fmt.Sprintf("ELF machine %s, built without the %s flags %s", machine, arch, strings.Join(missing, " "))
	}
	detail := fmt.Sprintf("ELF machine %s, %s, %s", machine, march, strings.Join(archFlags[arch][1:], " "))
	if r.o.Expect.Arch == "" {
		detail += " (no architecture expected: not compared)"
	}
	return Pass, detail
}
