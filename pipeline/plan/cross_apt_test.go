package plan

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCrossAptSplit runs the cross builder's source split (crossAptSplit) with bash and sed on
// copies of an Ubuntu image's two variants, whose amd64 and arm64 archives differ, and of
// one-line sources, and checks each entry keeps to its architecture; without the target's
// sources it changes nothing (a Debian image: one archive for every architecture).
func TestCrossAptSplit(t *testing.T) {
	const (
		ubuntuAMD64 = "Types: deb\nURIs: http://archive.example/ubuntu/\nSuites: noble noble-updates\nComponents: main universe\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n\nTypes: deb\nURIs: http://security.example/ubuntu/\nSuites: noble-security\nComponents: main universe\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n"
		ubuntuARM64 = "Types: deb\nURIs: http://ports.example/ubuntu-ports/\nSuites: noble noble-updates noble-security\nComponents: main universe\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n"
		listAMD64   = "# a comment\ndeb http://archive.example/ubuntu noble main\ndeb [signed-by=/k.gpg] http://extra.example/ubuntu noble main\ndeb [arch=amd64,i386] http://multi.example/ubuntu noble main\n"
		listARM64   = "deb http://ports.example/ubuntu-ports noble main\n"
	)
	write := func(t *testing.T, path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	c := &Cross{Build: Platform{OS: "linux", Arch: "amd64"}}
	runSplit := func(t *testing.T, apt, target string) {
		t.Helper()
		out, err := exec.Command("bash", "-euo", "pipefail", "-c", c.crossAptSplit("arm64", apt, target)).CombinedOutput()
		if err != nil {
			t.Fatalf("the split failed: %v\n%s", err, out)
		}
	}

	t.Run("ubuntu", func(t *testing.T) {
		dir := t.TempDir()
		apt, target := filepath.Join(dir, "etc-apt"), filepath.Join(dir, "target-apt")
		write(t, filepath.Join(apt, "sources.list.d/ubuntu.sources"), ubuntuAMD64)
		write(t, filepath.Join(apt, "sources.list"), listAMD64)
		write(t, filepath.Join(target, "sources.list.d/ubuntu.sources"), ubuntuARM64)
		write(t, filepath.Join(target, "sources.list"), listARM64)
		runSplit(t, apt, target)

		want := map[string]string{
			"sources.list.d/ubuntu.sources":                    "Types: deb\nArchitectures: amd64\nURIs: http://archive.example/ubuntu/\nSuites: noble noble-updates\nComponents: main universe\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n\nTypes: deb\nArchitectures: amd64\nURIs: http://security.example/ubuntu/\nSuites: noble-security\nComponents: main universe\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n",
			"sources.list.d/nginx-forge-target-ubuntu.sources": "Types: deb\nArchitectures: arm64\nURIs: http://ports.example/ubuntu-ports/\nSuites: noble noble-updates noble-security\nComponents: main universe\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n",
			"sources.list":                           "# a comment\ndeb [arch=amd64] http://archive.example/ubuntu noble main\ndeb [arch=amd64 signed-by=/k.gpg] http://extra.example/ubuntu noble main\ndeb [arch=amd64,i386] http://multi.example/ubuntu noble main\n",
			"sources.list.d/nginx-forge-target.list": "deb [arch=arm64] http://ports.example/ubuntu-ports noble main\n",
		}
		for f, w := range want {
			if got := read(t, filepath.Join(apt, f)); got != w {
				t.Errorf("%s:\n%s\nwant:\n%s", f, got, w)
			}
		}
		// Run twice (a setup step run again on the same root): nothing added twice.
		runSplit(t, apt, target)
		for f, w := range want {
			if got := read(t, filepath.Join(apt, f)); got != w {
				t.Errorf("a second run changed %s:\n%s", f, got)
			}
		}
	})

	t.Run("debian", func(t *testing.T) {
		dir := t.TempDir()
		apt := filepath.Join(dir, "etc-apt")
		write(t, filepath.Join(apt, "sources.list.d/debian.sources"), ubuntuAMD64)
		runSplit(t, apt, filepath.Join(dir, "absent"))
		if got := read(t, filepath.Join(apt, "sources.list.d/debian.sources")); got != ubuntuAMD64 {
			t.Errorf("without the target's sources the builder's changed:\n%s", got)
		}
		if ents, _ := os.ReadDir(filepath.Join(apt, "sources.list.d")); len(ents) != 1 {
			t.Errorf("without the target's sources files were added: %v", ents)
		}
	})
}
