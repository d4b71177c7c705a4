package plan

import (
	"fmt"
	"sort"
	"strings"
)

// CPULevel is a named -march target the build can compile for.
type CPULevel struct {
	Name string // the -march value
	Arch string // GOARCH-style architecture it applies to
	// Note says what the level requires, so `--cpu` errors and docs can explain the choice.
	Note string
}

// nativeCPU compiles for the build machine's own CPU. It is allowed only when asked for:
// it bakes whatever the builder has (AVX-512 on our CI machines) into every instruction
// choice, and the binary then dies with SIGILL on an older or different server.
const nativeCPU = "native"

// CPULevels are the levels the plan accepts besides "native". They are the x86-64
// micro-architecture levels of the psABI and the Arm architecture versions GCC names; both
// are portable promises ("any CPU from about year N") rather than one vendor's model.
var CPULevels = []CPULevel{
	{Name: "x86-64", Arch: "amd64", Note: "baseline: SSE2, runs on every x86-64 CPU"},
	{Name: "x86-64-v2", Arch: "amd64", Note: "SSE4.2, POPCNT (Nehalem 2008+, all current x86 servers)"},
	{Name: "x86-64-v3", Arch: "amd64", Note: "AVX2, BMI2, FMA (Haswell 2013+, Zen 1+); the default"},
	{Name: "x86-64-v4", Arch: "amd64", Note: "AVX-512 (Skylake-SP+, Zen 4+); excludes many cloud and desktop CPUs"},
	{Name: "armv8-a", Arch: "arm64", Note: "baseline: runs on every arm64 CPU"},
	{Name: "armv8.2-a", Arch: "arm64", Note: "LSE atomics, fp16 (Neoverse N1/Graviton2+, Ampere Altra); the default"},
	{Name: "armv8.4-a", Arch: "arm64", Note: "Neoverse V1/Graviton3+"},
	{Name: "armv9-a", Arch: "arm64", Note: "SVE2 (Neoverse N2/V2, Graviton4+)"},
}

// defaultCPU is the level used when none is asked for: the newest level that still runs on
// practically every server of the architecture that is still in service. x86-64-v3 gives
// nginx's C code (and zlib, PCRE2) AVX2/BMI2 code generation; OpenSSL picks its assembly at
// run time anyway, so going further (v4) buys little and loses machines.
func defaultCPU(arch string) string {
	switch arch {
	case "arm64":
		return "armv8.2-a"
	default:
		return "x86-64-v3"
	}
}

// checkCPU validates a level for an architecture.
func checkCPU(level, arch string) error {
	if level == nativeCPU {
		return nil
	}
	var names []string
	for _, l := range CPULevels {
		if l.Arch != arch {
			continue
		}
		if l.Name == level {
			return nil
		}
		names = append(names, l.Name)
	}
	sort.Strings(names)
	return fmt.Errorf("CPU level %q is not known for %s: use one of %s, or %q to target the build machine (not portable)",
		level, arch, strings.Join(names, ", "), nativeCPU)
}
