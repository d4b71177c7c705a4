package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// pinnedLock names, in TestGolden's table, the test lock with pinInTime applied.
const pinnedLock = "pinned"

// Pins for the goldens of a lock whose builder is pinned in time. The digest is a made-up
// pattern, not an image's: the goldens test the rendering, and no test pulls it.
const (
	testBuilderDigest   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	testBuilderSnapshot = "20261201T000000Z"
)

// snapshotConf is the apt configuration file the setup writes the snapshot to.
const snapshotConf = "/etc/apt/apt.conf.d/nginx-forge-snapshot"

// pinInTime gives l's builder a digest and an archive snapshot, as the shipped locks have.
func pinInTime(l *lock.Lock) {
	l.Images.Builder.Digest = testBuilderDigest
	l.Images.Builder.Snapshot = testBuilderSnapshot
}

// TestSetupScriptGolden keeps the builder's setup script (what the Dagger engine runs and
// the Dockerfile renders) of a pinned lock under testdata/, native and cross: the snapshot
// is given to apt as its own option before the first apt-get. Regenerate: go test
// ./pipeline/plan -run SetupScriptGolden -update
func TestSetupScriptGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cross bool
	}{
		{"setup-linux-amd64-pinned", false},
		{"setup-linux-arm64-cross-from-amd64-pinned", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLock(t)
			pinInTime(l)
			var opts []plan.Option
			if tc.cross {
				opts = append(opts, plan.WithPlatform(linuxARM64))
			}
			p, err := plan.New(l, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.cross {
				if p, err = p.ForBuild("amd64"); err != nil {
					t.Fatal(err)
				}
			}
			got := p.ContainerSetupScript()
			file := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./pipeline/plan -run SetupScriptGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("setup script differs from %s (if intended, run go test ./pipeline/plan -run SetupScriptGolden -update and review the diff):\n%s", file, diff(string(want), got))
			}
		})
	}
}

// TestSnapshotOnlyWhenPinned: the setup of a lock without a snapshot is byte for byte what it
// was (the engines' cache keys of every existing lock stay), and with one, the snapshot is
// configured before apt-get update reads the archive.
func TestSnapshotOnlyWhenPinned(t *testing.T) {
	l := testLock(t)
	bare, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	if s := bare.ContainerSetupScript(); strings.Contains(s, "Snapshot") || strings.Contains(s, snapshotConf) {
		t.Errorf("setup of a lock without a snapshot mentions one:\n%s", s)
	}
	pinInTime(l)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	s := p.ContainerSetupScript()
	conf := strings.Index(s, `echo 'APT::Snapshot "`+testBuilderSnapshot+`";' > `+snapshotConf+"\n")
	update := strings.Index(s, "apt-get update")
	if conf < 0 || update < 0 || conf > update {
		t.Errorf("setup script does not configure the snapshot before apt-get update:\n%s", s)
	}
	if want := "docker.io/library/ubuntu:24.04@" + testBuilderDigest; p.BuilderImage != want {
		t.Errorf("builder image %q, want %q", p.BuilderImage, want)
	}
}
