package dockerfile_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/dockerfile"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The -update flag may be declared by another test file of this package too; declare it
// only if nobody did (package-level flag vars are created before init functions run).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func updating() bool { return flag.Lookup("update").Value.String() == "true" }

const regenerate = "go run ./ci dockerfile -o dockerfiles/Dockerfile"

func defaultDockerfile(t *testing.T, opts ...plan.Option) ([]byte, *plan.Plan) {
	t.Helper()
	l := lock.Default()
	p, err := plan.New(l, opts...)
	if err != nil {
		t.Fatalf("plan.New: %v", err)
	}
	b, err := dockerfile.Render(p, l)
	if err != nil {
		t.Fatalf("RenderDockerfile: %v", err)
	}
	return b, p
}

// TestDockerfileGolden keeps dockerfiles/Dockerfile equal to the rendering of the default
// lock and options: a flag, script or pin changed in the plan without regenerating fails here.
func TestDockerfileGolden(t *testing.T) {
	got, _ := defaultDockerfile(t)
	file := filepath.Join(testenv.RepoRoot(), "dockerfiles", "Dockerfile")
	if updating() {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading the committed Dockerfile: %v (create it with `%s`)", err, regenerate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("dockerfiles/Dockerfile differs from the plan it is rendered from:\n%s\nregenerate it with `%s` (or `go test ./pipeline/dockerfile -run DockerfileGolden -update`) and commit it",
			firstDiff(want, got), regenerate)
	}
}

func firstDiff(committed, rendered []byte) string {
	a := strings.Split(string(committed), "\n")
	b := strings.Split(string(rendered), "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("first difference at line %d:\n  committed: %s\n  plan:      %s", i+1, x, y)
		}
	}
	return "(only line endings differ)"
}

// TestDockerfileFollowsPlan: the stale-file check is not vacuous; a flag changed in the plan
// shows up in the rendering, so the golden comparison above catches it.
func TestDockerfileFollowsPlan(t *testing.T) {
	l := lock.Default()
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	before, err := dockerfile.Render(p, l)
	if err != nil {
		t.Fatal(err)
	}
	p.Stages[len(p.Stages)-1].Env = append(p.Stages[len(p.Stages)-1].Env, plan.EnvVar{Name: "EXTRA_FLAG", Value: "-fno-plt"})
	after, err := dockerfile.Render(p, l)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, after) || !bytes.Contains(after, []byte(`EXTRA_FLAG="-fno-plt"`)) {
		t.Error("an environment variable added to the plan does not appear in the Dockerfile")
	}
}

// TestDockerfileCPUArg: the CPU build arg is the only place the CPU level appears, so
// `--build-arg CPU=...` really changes -march, and rendering for another level changes only
// the arg's default.
func TestDockerfileCPUArg(t *testing.T) {
	def, p := defaultDockerfile(t)
	v2, _ := defaultDockerfile(t, plan.WithCPU("x86-64-v2"))
	if strings.Contains(string(def), "-march="+p.CPU) {
		t.Errorf("the Dockerfile names -march=%s literally; it must use ${CPU}", p.CPU)
	}
	n := strings.Count(string(def), "-march=${CPU}")
	if n < len(p.Stages) {
		t.Errorf("-march=${CPU} appears %d times, want at least once per stage (%d)", n, len(p.Stages))
	}
	for _, s := range p.Stages {
		if !regexp.MustCompile(`(?m)^FROM builder AS ` + s.Name + `\nARG CPU\n`).Match(def) {
			t.Errorf("stage %s does not declare ARG CPU, so ${CPU} would expand to nothing there", s.Name)
		}
	}
	want := strings.Replace(string(def), "ARG CPU="+p.CPU+"\n", "ARG CPU=x86-64-v2\n", 1)
	if string(v2) != want {
		t.Errorf("rendering for x86-64-v2 differs from the default in more than the CPU arg:\n%s", firstDiff([]byte(want), v2))
	}
}

func TestDockerfileContents(t *testing.T) {
	b, p := defaultDockerfile(t)
	df := string(b)
	l := lock.Default()
	if !strings.HasPrefix(df, "# syntax="+dockerfile.Syntax+"\n") {
		t.Error("the Dockerfile does not start with its syntax line")
	}
	for _, c := range l.Components {
		want := fmt.Sprintf("ADD --checksum=sha256:%s %s /src/%s\n", c.SHA256, c.URL, c.FileName())
		if !strings.Contains(df, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, want := range []string{
		"ARG BUILDER_IMAGE=" + l.Images.Builder.Pinned() + "\n",
		"ARG RUNTIME_IMAGE=" + l.Images.Runtime.Pinned() + "\n",
		"--mount=type=cache,target=/var/cache/apt,sharing=locked",
		"--mount=type=cache,target=/var/lib/apt,sharing=locked",
		"rm -f /etc/apt/apt.conf.d/docker-clean\n",
		"PGP",
		"COPY --from=openssl /out/openssl/ /deps/openssl/\n",
		`DEP_OPENSSL="/deps/openssl"`,
		"\nFROM ${RUNTIME_IMAGE}\n",
		"RUN chown -R 65532:65532 /rootfs/var/cache/nginx /rootfs/run/nginx\n",
		"\nUSER 65532:65532\n",
		"\nEXPOSE 8080/tcp 8443/tcp 8443/udp\n",
		"\nSTOPSIGNAL SIGQUIT\n",
		"\nENTRYPOINT [\"/usr/sbin/nginx\",\"-g\",\"daemon off;\"]\n",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	// Every stage script is embedded verbatim, so the Dockerfile runs what Dagger runs.
	for _, s := range p.Stages {
		if !strings.Contains(df, "RUN <<'NGINX_FORGE_EOF'\n"+plan.ContainerScript(s)+"NGINX_FORGE_EOF\n") {
			t.Errorf("stage %s's script is not embedded verbatim", s.Name)
		}
		for _, f := range s.Files {
			if !strings.Contains(df, "NGINX_FORGE_EOF' /work/"+f.Path+"\n"+string(f.Data)+"NGINX_FORGE_EOF\n") {
				t.Errorf("stage %s's file %s is not embedded verbatim", s.Name, f.Path)
			}
		}
	}
}

func TestDockerfileRefusals(t *testing.T) {
	l := lock.Default()
	fresh := func() *plan.Plan {
		p, err := plan.New(l)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		break_ func(p *plan.Plan)
		want   string
	}{
		{"script names the CPU level", func(p *plan.Plan) { p.Stages[0].Script += "gcc -march=" + p.CPU + " x.c\n" }, "build arg cannot change"},
		{"CPU level nowhere in the env", func(p *plan.Plan) {
			for i := range p.Stages {
				for j := range p.Stages[i].Env {
					p.Stages[i].Env[j].Value = strings.ReplaceAll(p.Stages[i].Env[j].Value, "-march="+p.CPU, "")
				}
			}
		}, "would change nothing"},
		{"heredoc delimiter in a script", func(p *plan.Plan) { p.Stages[1].Script += "NGINX_FORGE_EOF\n" }, "delimiter"},
		{"file without final newline", func(p *plan.Plan) {
			last := &p.Stages[len(p.Stages)-1]
			last.Files = append(last.Files, plan.File{Path: "x", Mode: 0o644, Data: []byte("no newline")})
		}, "newline"},
		{"plan from another lock", func(p *plan.Plan) { p.Stages[2].Source.SHA256 = strings.Repeat("0", 64) }, "plan and lock differ"},
		{"missing final stage", func(p *plan.Plan) { p.Final = "nope" }, `"nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fresh()
			tc.break_(p)
			_, err := dockerfile.Render(p, l)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RenderDockerfile = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestDockerfileSourceMirror: with a mirror every ADD fetches MIRROR/<file name> and keeps
// the lock's checksum; nothing else changes but the header line saying so; a mirror that is
// not an http(s) URL is refused, naming it.
func TestDockerfileSourceMirror(t *testing.T) {
	l := lock.Default()
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := dockerfile.Render(p, l)
	if err != nil {
		t.Fatal(err)
	}
	mirrored, err := dockerfile.Render(p, l, dockerfile.WithSourceMirror("http://127.0.0.1:8000/src/"))
	if err != nil {
		t.Fatal(err)
	}
	var adds int
	for _, line := range strings.Split(string(mirrored), "\n") {
		if !strings.HasPrefix(line, "ADD ") {
			continue
		}
		adds++
		f := strings.Fields(line)
		if len(f) != 4 || !strings.HasPrefix(f[2], "http://127.0.0.1:8000/src/") {
			t.Errorf("ADD does not fetch from the mirror: %s", line)
		}
	}
	if adds != len(l.Components) {
		t.Errorf("%d ADD lines, want one per component (%d)", adds, len(l.Components))
	}
	for _, c := range l.Components {
		want := "ADD --checksum=sha256:" + c.SHA256 + " http://127.0.0.1:8000/src/" + c.FileName() + " "
		if !strings.Contains(string(mirrored), want) {
			t.Errorf("no %q line", want)
		}
	}
	// Apart from the ADD lines and the header's note, the two renderings are the same.
	strip := func(b []byte) string {
		var keep []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "ADD ") || strings.Contains(line, "mirror") || line == "#" {
				continue
			}
			keep = append(keep, line)
		}
		return strings.Join(keep, "\n")
	}
	if strip(upstream) != strip(mirrored) {
		t.Error("the mirror changed more than the ADD lines")
	}
	for _, bad := range []string{"ftp://mirror.example/src", "127.0.0.1:8000", "http://"} {
		_, err := dockerfile.Render(p, l, dockerfile.WithSourceMirror(bad))
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("mirror %q: err = %v, want an error naming it", bad, err)
		}
	}
}

// TestDockerfileGoldenPGO keeps the pgo renderings of the default lock under testdata/, so
// the training and profile steps (and any change to them) are reviewed as a Dockerfile too:
// pgo.Dockerfile trains during the build (no recorded profile), pgo-recorded.Dockerfile
// fetches a recorded profile by URL and checksum and trains nothing; aws-lc-pgo*.Dockerfile
// are the same for the AWS-LC variant's lock (an in-repository profile for the second). Regenerate: go test
// ./pipeline/dockerfile -run DockerfileGoldenPGO -update
func TestDockerfileGoldenPGO(t *testing.T) {
	l := lock.Default()
	trained, err := plan.New(l, plan.WithOptimize(plan.OptimizePGO))
	if err != nil {
		t.Fatal(err)
	}
	recorded := *l
	recorded.Profiles = []lock.Profile{{Platform: "linux/amd64", Training: trained.TrainingKey,
		URL: "https://pgo.example.org/nginx-forge/nginx-forge-pgo-amd64.tar.gz", SHA256: strings.Repeat("5e", 32)}}
	// The AWS-LC variant (the shipped variant lock): zlib-ng, PCRE2 and AWS-LC instrumented
	// and compiled with the profile too.
	vb, _ := lock.BuiltinAt(lock.AWSLCPath)
	variant := vb.Lock()
	vtrained, err := plan.New(variant, plan.WithOptimize(plan.OptimizePGO))
	if err != nil {
		t.Fatal(err)
	}
	vrecorded := *variant
	vrecorded.Profiles = []lock.Profile{{Platform: "linux/amd64", Training: vtrained.TrainingKey,
		URL: "profiles/linux-amd64-" + vtrained.TrainingKey + ".tar.gz", SHA256: strings.Repeat("7a", 32)}}
	for _, tc := range []struct {
		file  string
		lock  *lock.Lock
		wants []string
	}{
		{"pgo.Dockerfile", l, []string{"FROM builder AS openssl-instrumented", "FROM builder AS pgo-train", `. "$WORK/files/train/train.sh"`, "-fprofile-generate=/pgo/nginx", "-fprofile-use"}},
		{"pgo-recorded.Dockerfile", &recorded, []string{"FROM builder AS pgo-profile", "ADD --checksum=sha256:" + strings.Repeat("5e", 32) + " https://pgo.example.org/nginx-forge/nginx-forge-pgo-amd64.tar.gz", "-fprofile-use"}},
		{"aws-lc-pgo.Dockerfile", variant, []string{"FROM builder AS aws_lc-instrumented", "FROM builder AS zlib_ng-instrumented", "FROM builder AS pcre2-instrumented",
			`export DEP_AWS_LC="$DEP_AWS_LC_INSTRUMENTED"`, "-fprofile-generate=/pgo/aws_lc", `-DCMAKE_AR="$(command -v "$AR")"`, "-fprofile-use"}},
		{"aws-lc-pgo-recorded.Dockerfile", &vrecorded, []string{"FROM builder AS pgo-profile", `"$DEP_PGO_PROFILE/pgo/aws_lc"/*.gcda`, `"$DEP_PGO_PROFILE/pgo/zlib_ng"/*.gcda`, "-fprofile-use"}},
	} {
		p, err := plan.New(tc.lock, plan.WithOptimize(plan.OptimizePGO))
		if err != nil {
			t.Fatal(err)
		}
		got, err := dockerfile.Render(p, tc.lock)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.wants {
			if !bytes.Contains(got, []byte(w)) {
				t.Errorf("%s lacks %q", tc.file, w)
			}
		}
		file := filepath.Join("testdata", tc.file)
		if updating() {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("reading %s: %v (regenerate with go test ./pipeline/dockerfile -run DockerfileGoldenPGO -update)", file, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s drifted from the plan:\n%s\nregenerate with go test ./pipeline/dockerfile -run DockerfileGoldenPGO -update", file, firstDiff(want, got))
		}
	}
}

// TestDockerfileGoldenAWSLC keeps the AWS-LC variant's rendering (the shipped variant lock)
// under testdata/aws-lc.Dockerfile: each git source is fetched by commit with BuildKit's git
// ADD and refused unless git, with every attribute conversion off, hashes it to the pinned
// tree; with a mirror, its archive is checked the same way. Regenerate: go test
// ./pipeline/dockerfile -run DockerfileGoldenAWSLC -update
func TestDockerfileGoldenAWSLC(t *testing.T) {
	b, _ := lock.BuiltinAt(lock.AWSLCPath)
	l := b.Lock()
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dockerfile.Render(p, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"ADD --keep-git-dir=false https://github.com/aws/aws-lc.git#991e67ff4cf04df4dd89e407f8b920c6936cb56a /src/aws_lc-tree/aws-lc-5.5.0",
		`if [ "$tree" != "ae54cd9455f9630451d505855afe808a9f028b25" ]; then`,
		"tar -czf /src/aws-lc-5.5.0-git.tar.gz -C /src/aws_lc-tree aws-lc-5.5.0",
		"./configure \\\n  --prefix=/etc/nginx", "FROM builder AS zlib_ng", "cmake",
	} {
		if !bytes.Contains(got, []byte(w)) {
			t.Errorf("aws-lc.Dockerfile lacks %q", w)
		}
	}
	mirrored, err := dockerfile.Render(p, l, dockerfile.WithSourceMirror("http://127.0.0.1:8000"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(mirrored, []byte("ADD http://127.0.0.1:8000/aws-lc-5.5.0-git.tar.gz /src/aws-lc-5.5.0-git.tar.gz")) || bytes.Contains(mirrored, []byte("github.com/aws/aws-lc.git#")) {
		t.Error("with a mirror, the variant's Dockerfile does not take the git sources' archives from it")
	}
	file := filepath.Join("testdata", "aws-lc.Dockerfile")
	if updating() {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading %s: %v (regenerate with go test ./pipeline/dockerfile -run DockerfileGoldenAWSLC -update)", file, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s drifted from the plan:\n%s\nregenerate with go test ./pipeline/dockerfile -run DockerfileGoldenAWSLC -update", file, firstDiff(want, got))
	}
}

// TestDockerfileInstallsGitForAGitPinnedNginx: a lock that pins nginx alone by git commit
// (the test twin) renders a builder that installs git, which checks the tree; the default
// lock's (tarballs only) does not.
func TestDockerfileInstallsGitForAGitPinnedNginx(t *testing.T) {
	twin, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		l    *lock.Lock
		git  bool
	}{{"the twin (git nginx)", twin, true}, {"the default lock", lock.Default(), false}} {
		p, err := plan.New(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dockerfile.Render(p, tc.l)
		if err != nil {
			t.Fatal(err)
		}
		_, install, _ := strings.Cut(string(b), "apt-get install -y --no-install-recommends ")
		install, _, _ = strings.Cut(install, "\n")
		if got := slices.Contains(strings.Fields(install), "git"); got != tc.git {
			t.Errorf("%s: the builder installs %q; git there = %v, want %v", tc.name, install, got, tc.git)
		}
	}
}
