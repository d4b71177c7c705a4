package standin

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// aptDir is a private apt configuration: its own sources.list, lists, status file and
// archive cache, so the host's apt setup is neither read nor written.
type aptDir struct {
	root string
	o    Options
}

func (a aptDir) args() []string {
	r := a.root
	return []string{
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(r, "sources.list"),
		"-o", "Dir::Etc::sourceparts=" + filepath.Join(r, "sources.list.d"),
		"-o", "Dir::Etc::preferencesparts=" + filepath.Join(r, "preferences.d"),
		"-o", "Dir::Etc::preferences=" + filepath.Join(r, "preferences"),
		"-o", "Dir::State=" + filepath.Join(r, "state"),
		"-o", "Dir::State::status=" + filepath.Join(r, "state", "status"),
		"-o", "Dir::Cache=" + filepath.Join(r, "cache"),
		"-o", "APT::Architecture=" + a.o.Arch,
		"-o", "APT::Architectures=" + a.o.Arch,
		// apt drops to the _apt user to download, which cannot write into a test's
		// directories; the files are verified against the signed Release file anyway.
		"-o", "APT::Sandbox::User=root",
		"-o", "Acquire::Languages=none",
		"-o", "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::CNF::DefaultEnabled=false",
		"-o", "Debug::NoLocking=1",
		"-q",
	}
}

func (a aptDir) update(ctx context.Context) error {
	for _, d := range []string{"sources.list.d", "preferences.d", "state/lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(a.root, d), 0o755); err != nil {
			return err
		}
	}
	sources := fmt.Sprintf("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n", a.o.Mirror, a.o.Suite)
	srcPath := filepath.Join(a.root, "sources.list")
	old, _ := os.ReadFile(srcPath)
	changed := string(old) != sources
	if changed {
		if err := os.WriteFile(srcPath, []byte(sources), 0o644); err != nil {
			return err
		}
	}
	status := filepath.Join(a.root, "state", "status")
	if _, err := os.Stat(status); err != nil {
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			return err
		}
	}
	stamp := filepath.Join(a.root, "updated")
	if st, err := os.Stat(stamp); err == nil && !changed && time.Since(st.ModTime()) < a.o.MaxListAge {
		return nil
	}
	a.o.Progress.Send(progress.Detailf("apt-get update (%s %s, private state in %s)", a.o.Mirror, a.o.Suite, a.root))
	if err := a.run(ctx, "", "apt-get", "update"); err != nil {
		return fmt.Errorf("fetching the %s package lists from %s: %w (is the Debian mirror reachable from here, and does it carry %s?)", a.o.Suite, a.o.Mirror, err, a.o.Suite)
	}
	return os.WriteFile(stamp, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
}

// versions asks the private lists for the candidate version of each package.
func (a aptDir) versions(ctx context.Context, pkgs []string) (map[string]string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "apt-cache", append(a.args(), append([]string{"show", "--no-all-versions"}, pkgs...)...)...)
	cmd.Stdout = &out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		// apt-get update exits 0 when it could not fetch a list: an unreachable mirror or
		// a suite it does not carry shows up here, as no packages.
		return nil, fmt.Errorf("apt-cache show %s: %w: %s (no package lists from %s %s: is the mirror reachable from here, and does it carry %s?)", strings.Join(pkgs, " "), err, strings.TrimSpace(stderr.String()), a.o.Mirror, a.o.Suite, a.o.Suite)
	}
	got := map[string]string{}
	var pkg string
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Package: "); ok {
			pkg = v
		} else if v, ok := strings.CutPrefix(line, "Version: "); ok && pkg != "" {
			got[pkg] = v
		}
	}
	for _, p := range pkgs {
		if got[p] == "" {
			return nil, fmt.Errorf("package %s not found in %s %s lists", p, a.o.Mirror, a.o.Suite)
		}
	}
	return got, nil
}

func (a aptDir) run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, append(a.args(), args...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, toolbox.Tail(out.String(), 1500))
	}
	return nil
}
