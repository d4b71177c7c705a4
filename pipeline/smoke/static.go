package smoke

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// shells is what must not exist in the image (as file, link or dangling link): a shell
// turns any code execution bug into an interactive foothold.
var shells = []string{
	"/bin/sh", "/bin/bash", "/bin/dash", "/bin/ash", "/bin/busybox",
	"/usr/bin/sh", "/usr/bin/bash", "/usr/bin/dash", "/usr/bin/ash", "/usr/bin/busybox",
	"/sbin/busybox", "/usr/sbin/busybox",
}

func checkNoShell(ctx context.Context, r *runner) (Status, string) {
	root := r.t.RootFS()
	if root == "" {
		return Skip, "the runtime gives no root filesystem to inspect"
	}
	var found []string
	for _, s := range shells {
		// Any entry counts, even a link to nothing: the test is about the image's files.
		// The parent directories are resolved inside the image (merged /usr links).
		dir, err := resolveIn(root, path.Dir(s))
		if err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, path.Base(s))); err == nil {
			found = append(found, s)
		}
	}
	if len(found) > 0 {
		return Fail, "present: " + strings.Join(found, ", ")
	}
	return Pass, "none of " + strings.Join(shells, " ")
}

// elfCheck opens the nginx binary in the image and runs fn on it.
func elfCheck(fn func(f *elf.File) (Status, string)) func(context.Context, *runner) (Status, string) {
	return func(ctx context.Context, r *runner) (Status, string) {
		f, err := r.openBinary()
		if err != nil {
			if errors.Is(err, errNoRootFS) {
				return Skip, err.Error()
			}
			return Fail, err.Error()
		}
		defer f.Close()
		return fn(f)
	}
}

var errNoRootFS = errors.New("the runtime gives no root filesystem to inspect")

func (r *runner) openBinary() (*elf.File, error) {
	root := r.t.RootFS()
	if root == "" {
		return nil, errNoRootFS
	}
	p, err := resolveIn(root, r.o.Binary)
	if err != nil {
		return nil, fmt.Errorf("%s in the image: %w", r.o.Binary, err)
	}
	f, err := elf.Open(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s as ELF: %w", r.o.Binary, err)
	}
	return f, nil
}

func dynFlag(f *elf.File, tag elf.DynTag, bit uint64) bool {
	vals, err := f.DynValue(tag)
	if err != nil {
		return false
	}
	for _, v := range vals {
		if v&bit != 0 {
			return true
		}
	}
	return false
}

func checkPIE(f *elf.File) (Status, string) {
	if f.Type != elf.ET_DYN {
		return Fail, fmt.Sprintf("ELF type %s: not position independent (want ET_DYN)", f.Type)
	}
	if !dynFlag(f, elf.DT_FLAGS_1, uint64(elf.DF_1_PIE)) {
		return Fail, "ET_DYN without DF_1_PIE in DT_FLAGS_1: a shared library, not a PIE executable"
	}
	return Pass, "ET_DYN with DF_1_PIE"
}

func checkRELRO(f *elf.File) (Status, string) {
	relro := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_RELRO {
			relro = true
		}
	}
	bindNow := false
	var how string
	switch {
	case dynFlag(f, elf.DT_FLAGS_1, uint64(elf.DF_1_NOW)):
		bindNow, how = true, "DF_1_NOW"
	case dynFlag(f, elf.DT_FLAGS, uint64(elf.DF_BIND_NOW)):
		bindNow, how = true, "DF_BIND_NOW"
	default:
		if v, err := f.DynValue(elf.DT_BIND_NOW); err == nil && len(v) > 0 {
			bindNow, how = true, "DT_BIND_NOW"
		}
	}
	switch {
	case !relro:
		return Fail, "no PT_GNU_RELRO segment (link with -Wl,-z,relro)"
	case !bindNow:
		return Fail, "PT_GNU_RELRO but lazy binding: partial RELRO only (link with -Wl,-z,now)"
	}
	return Pass, "PT_GNU_RELRO and BIND_NOW (" + how + ")"
}

func importedNames(f *elf.File) map[string]bool {
	syms, err := f.ImportedSymbols()
	names := map[string]bool{}
	if err != nil {
		return names
	}
	for _, s := range syms {
		names[s.Name] = true
	}
	return names
}

func checkCanary(f *elf.File) (Status, string) {
	if importedNames(f)["__stack_chk_fail"] {
		return Pass, "imports __stack_chk_fail"
	}
	return Fail, "no __stack_chk_fail import: compiled without -fstack-protector"
}

func checkNX(f *elf.File) (Status, string) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_STACK {
			if p.Flags&elf.PF_X != 0 {
				return Fail, "PT_GNU_STACK is executable (" + p.Flags.String() + ")"
			}
			return Pass, "PT_GNU_STACK " + p.Flags.String()
		}
	}
	return Fail, "no PT_GNU_STACK: the kernel gives such binaries an executable stack"
}

func checkFortify(f *elf.File) (Status, string) {
	var chk []string
	for n := range importedNames(f) {
		if strings.HasPrefix(n, "__") && strings.HasSuffix(n, "_chk") && n != "__stack_chk_fail" {
			chk = append(chk, n)
		}
	}
	sort.Strings(chk)
	if len(chk) == 0 {
		return Fail, "no __*_chk imports: compiled without -D_FORTIFY_SOURCE (needs -O1 or more)"
	}
	shown := chk
	if len(shown) > 6 {
		shown = append(append([]string{}, chk[:6]...), "...")
	}
	return Pass, fmt.Sprintf("%d fortified functions: %s", len(chk), strings.Join(shown, " "))
}

// libDirs are where the dynamic loader of a Debian-family image looks, by ELF machine.
func libDirs(m elf.Machine) []string {
	triplet := map[elf.Machine]string{
		elf.EM_X86_64:  "x86_64-linux-gnu",
		elf.EM_AARCH64: "aarch64-linux-gnu",
		elf.EM_386:     "i386-linux-gnu",
		elf.EM_ARM:     "arm-linux-gnueabihf",
	}[m]
	var dirs []string
	if triplet != "" {
		dirs = append(dirs, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

type elfObj struct {
	name, path string // as needed, and where found in the image
	f          *elf.File
}

// checkDynamicNeeds resolves the binary's interpreter and every DT_NEEDED library,
// recursively, among the image's files, and checks that each needed symbol version
// (GLIBC_2.38, say) is defined by the library found: a binary built against a newer glibc
// than the base image's starts with "version `GLIBC_2.38' not found".
func checkDynamicNeeds(ctx context.Context, r *runner) (Status, string) {
	root := r.t.RootFS()
	if root == "" {
		return Skip, errNoRootFS.Error()
	}
	bin, err := r.openBinary()
	if err != nil {
		return Fail, err.Error()
	}
	defer bin.Close()

	interp, err := interpreter(bin)
	if err != nil {
		return Fail, err.Error()
	}
	if interp == "" {
		return Pass, "statically linked: no interpreter, no libraries"
	}
	var problems, found []string
	if p, err := resolveIn(root, interp); err != nil {
		problems = append(problems, fmt.Sprintf("interpreter %s: %v", interp, err))
	} else if err := sameArch(bin, p); err != nil {
		problems = append(problems, fmt.Sprintf("interpreter %s: %v", interp, err))
	} else {
		found = append(found, interp)
	}
	objs, libs, missing := neededLibraries(root, bin)
	defer func() {
		for _, o := range objs {
			if o.f != nil {
				o.f.Close()
			}
		}
	}()
	found, problems = append(found, libs...), append(problems, missing...)
	maxGlibc, unmet := versionNeeds(bin, objs, path.Base(r.o.Binary))
	problems = append(problems, unmet...)
	sort.Strings(problems)
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "\n")
	}
	detail := "all found: " + strings.Join(found, " ")
	if maxGlibc != "" {
		detail += "; newest symbol version needed " + maxGlibc
	}
	return Pass, detail
}

// interpreter is the binary's PT_INTERP ("" for a statically linked one).
func interpreter(bin *elf.File) (string, error) {
	var interp string
	for _, p := range bin.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return "", fmt.Errorf("reading PT_INTERP: %w", err)
			}
			interp = string(bytes.TrimRight(b, "\x00"))
		}
	}
	return interp, nil
}

// neededLibraries follows DT_NEEDED from bin, recursively, through the loader's library
// directories under root. It returns each needed library by name (open where found: the
// caller closes them), the paths found, and the problems (a library not found, a
// DT_NEEDED not readable).
func neededLibraries(root string, bin *elf.File) (objs map[string]*elfObj, found, problems []string) {
	objs = map[string]*elfObj{}
	queue := []*elf.File{bin}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		libs, err := f.ImportedLibraries()
		if err != nil {
			problems = append(problems, "reading DT_NEEDED: "+err.Error())
			continue
		}
		for _, lib := range libs {
			if _, seen := objs[lib]; seen {
				continue
			}
			o := openLibrary(root, bin, lib)
			objs[lib] = o
			if o.f == nil {
				problems = append(problems, fmt.Sprintf("%s: not found in %s", lib, strings.Join(libDirs(bin.Machine), " ")))
				continue
			}
			found = append(found, o.path)
			queue = append(queue, o.f)
		}
	}
	return objs, found, problems
}

// openLibrary finds lib the way the loader does: the first of its directories under root
// that holds an ELF object of bin's architecture. Its f is nil when none does.
func openLibrary(root string, bin *elf.File, lib string) *elfObj {
	o := &elfObj{name: lib}
	for _, d := range libDirs(bin.Machine) {
		p, err := resolveIn(root, path.Join(d, lib))
		if err != nil {
			continue
		}
		if err := sameArch(bin, p); err != nil {
			continue // a library of another architecture: the loader skips it too
		}
		lf, err := elf.Open(p)
		if err != nil {
			continue
		}
		o.path, o.f = path.Join(d, lib), lf
		break
	}
	return o
}

// versionNeeds checks the symbol versions bin (named binName) needs from each library
// against the versions the library found defines, and returns the newest GLIBC_2.x needed.
func versionNeeds(bin *elf.File, objs map[string]*elfObj, binName string) (maxGlibc string, problems []string) {
	needs, err := bin.DynamicVersionNeeds()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		problems = append(problems, "reading version needs: "+err.Error())
	}
	for _, n := range needs {
		o := objs[n.Name]
		if o == nil || o.f == nil {
			continue // already reported as missing
		}
		defs, err := o.f.DynamicVersions()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: reading version definitions: %v", o.path, err))
			continue
		}
		have := map[string]bool{}
		for _, d := range defs {
			have[d.Name] = true
		}
		for _, dep := range n.Needs {
			if strings.HasPrefix(dep.Dep, "GLIBC_2.") && versionLess(maxGlibc, dep.Dep) {
				maxGlibc = dep.Dep
			}
			if !have[dep.Dep] {
				problems = append(problems, fmt.Sprintf("%s needs version %s, which %s in the image does not define", binName, dep.Dep, o.path))
			}
		}
	}
	return maxGlibc, problems
}

// sameArch checks that the file at p is an ELF object of bin's class and machine.
func sameArch(bin *elf.File, p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("not an ELF object: %w", err)
	}
	defer f.Close()
	if f.Class != bin.Class || f.Machine != bin.Machine {
		return fmt.Errorf("is %s %s, the binary is %s %s", f.Class, f.Machine, bin.Class, bin.Machine)
	}
	return nil
}

// versionLess compares GLIBC_2.N version names numerically ("" is least).
func versionLess(a, b string) bool {
	if a == "" {
		return true
	}
	var am, an, bm, bn int
	fmt.Sscanf(strings.TrimPrefix(a, "GLIBC_"), "%d.%d", &am, &an)
	fmt.Sscanf(strings.TrimPrefix(b, "GLIBC_"), "%d.%d", &bm, &bn)
	if am != bm {
		return am < bm
	}
	return an < bn
}

// resolveIn resolves an absolute path inside root as the image would see it: symbolic
// links (absolute or relative, such as Debian's /lib64/ld-linux-x86-64.so.2 or a merged
// /lib -> usr/lib) are followed within root, never out of it. The result is a host path
// that exists.
func resolveIn(root, p string) (string, error) {
	const maxLinks = 40
	links := 0
	rest := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	cur := "/"
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%s does not exist", p)
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
	return filepath.Join(root, cur), nil
}

// ReadImageFile reads the file at p (absolute, as the image sees it) from the image's root
// filesystem unpacked at root, its symbolic links resolved within root (resolveIn): a
// runner reads the image's own files this way, never the host's.
func ReadImageFile(root, p string) ([]byte, error) {
	hp, err := resolveIn(root, p)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(hp)
}
