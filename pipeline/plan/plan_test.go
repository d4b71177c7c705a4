package plan_test

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func testLock(t *testing.T) *lock.Lock {
	t.Helper()
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestGolden keeps the rendered plan (stages, flags, environment, scripts) under testdata/,
// so that no flag changes without a reviewed diff. Regenerate: go test ./pipeline/plan -update
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []plan.Option
		lock string // "" is the test lock
	}{
		{"linux-amd64", nil, ""},
		// The AWS-LC variant: git sources (nginx configured by ./auto/configure), AWS-LC's and
		// zlib-ng's stages, cmake and git in the builder.
		{"linux-amd64-aws-lc", nil, testenv.AWSLCTestLockPath()},
		{"linux-arm64", []plan.Option{plan.WithPlatform(linuxARM64)}, ""},
		{"linux-amd64-lto", []plan.Option{plan.WithOptimize(plan.OptimizeLTO)}, ""},
		{"linux-amd64-pgo", []plan.Option{plan.WithOptimize(plan.OptimizePGO)}, ""},
		// The test lock with its builder pinned in time (pinInTime): the builder line by
		// digest and the snapshot line; the other goldens, of locks without the pins, do not
		// show it.
		{"linux-amd64-pinned", nil, pinnedLock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLock(t)
			if tc.lock == pinnedLock {
				pinInTime(l)
			} else if tc.lock != "" {
				var err error
				if l, err = lock.Load(tc.lock); err != nil {
					t.Fatal(err)
				}
			}
			p, err := plan.New(l, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Render()
			file := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./pipeline/plan -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("plan rendering differs from %s (if the change is intended, run go test ./pipeline/plan -update and review the diff):\n%s", file, diff(string(want), got))
			}
		})
	}
}

func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

func TestDefaults(t *testing.T) {
	l := testLock(t)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	if p.Platform.String() != "linux/amd64" || p.CPU != "x86-64-v3" || p.Native || len(p.Warnings) != 0 {
		t.Errorf("defaults: platform %s cpu %s native %v warnings %v", p.Platform, p.CPU, p.Native, p.Warnings)
	}
	var names []string
	for _, s := range p.Stages {
		names = append(names, s.Name)
	}
	// The test lock has brotli and ngx_brotli, so the default set compiles brotli in; it
	// also has libzstd but no zstd module, so no zstd stage is built.
	if got := strings.Join(names, " "); got != "zlib pcre2 openssl brotli ngx_brotli nginx" {
		t.Errorf("stages = %s", got)
	}
	if p.Final != lock.Nginx {
		t.Errorf("final = %s", p.Final)
	}
	ng, _ := p.Stage(lock.Nginx)
	if strings.Join(ng.Deps, " ") != "zlib pcre2 openssl brotli ngx_brotli" {
		t.Errorf("nginx deps = %v", ng.Deps)
	}
	for _, s := range p.Stages {
		c := l.MustComponent(s.Source.Component)
		if s.Source.SHA256 != c.SHA256 || s.Source.FileName != c.FileName() || s.Source.Version != c.Version {
			t.Errorf("stage %s source %+v does not match the lock's %+v", s.Name, s.Source, c)
		}
		if env(s, "SOURCE_DATE_EPOCH") != strconv.FormatInt(l.SourceDateEpoch, 10) || l.SourceDateEpoch == 0 {
			t.Errorf("stage %s SOURCE_DATE_EPOCH = %q", s.Name, env(s, "SOURCE_DATE_EPOCH"))
		}
	}
	arm, err := plan.New(l, plan.WithPlatform(linuxARM64))
	if err != nil {
		t.Fatal(err)
	}
	if arm.CPU != "armv8.2-a" {
		t.Errorf("arm64 default CPU = %s", arm.CPU)
	}
}

func env(s plan.Stage, name string) string {
	for _, e := range s.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// everything is all the text of a plan that reaches a compiler: env values and scripts
// without their comment lines.
func everything(p *plan.Plan) string {
	var b strings.Builder
	for _, s := range p.Stages {
		for _, line := range strings.Split(s.Script, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") {
				b.WriteString(line + "\n")
			}
		}
		for _, e := range s.Env {
			b.WriteString("\n" + e.Name + "=" + e.Value)
		}
	}
	return b.String()
}

func TestFlags(t *testing.T) {
	l := testLock(t)
	amd, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	arm, err := plan.New(l, plan.WithPlatform(linuxARM64))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*plan.Plan{amd, arm} {
		// -O3 is measured to pay off for zlib only, and -DUNALIGNED_OK for zlib on amd64 only
		// (see zlibCFlags); nothing else gets them.
		for _, s := range p.Stages {
			one := everything(&plan.Plan{Stages: []plan.Stage{s}})
			if got, want := strings.Contains(one, "-O3"), s.Name == lock.Zlib; got != want {
				t.Errorf("%s stage %s: -O3 present = %v, want %v", p.Platform, s.Name, got, want)
			}
			if got, want := strings.Contains(one, "UNALIGNED_OK"), s.Name == lock.Zlib && p.Platform.Arch == "amd64"; got != want {
				t.Errorf("%s stage %s: -DUNALIGNED_OK present = %v, want %v", p.Platform, s.Name, got, want)
			}
		}
		all := everything(p)
		for _, bad := range []string{"-march=native", "TCP_FASTOPEN", "-static-libstdc++", "enable-fips", "--with-openssl=", "--with-pcre=", "--with-zlib=", " -g "} {
			if strings.Contains(all, bad) {
				t.Errorf("%s plan contains dropped flag %q", p.Platform, bad)
			}
		}
		for _, s := range p.Stages {
			fl := env(s, "CFLAGS") + env(s, "NGINX_CC_OPT")
			if fl == "" {
				continue
			}
			for _, want := range []string{"-O2", "-march=" + p.CPU, "-fstack-protector-strong", "-fstack-clash-protection", "-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3", "-fPIE"} {
				if !strings.Contains(fl, want) {
					t.Errorf("%s stage %s compile flags %q lack %q", p.Platform, s.Name, fl, want)
				}
			}
			if got := strings.Contains(fl, "-fcf-protection"); got != (p.Platform.Arch == "amd64") {
				t.Errorf("%s stage %s: -fcf-protection present = %v", p.Platform, s.Name, got)
			}
		}
		ng, _ := p.Stage(lock.Nginx)
		ld := env(ng, "NGINX_LD_OPT")
		for _, want := range []string{"-pie", "-Wl,-z,relro,-z,now", "-Wl,--as-needed", "-l:libcrypt.a"} {
			if !strings.Contains(ld, want) {
				t.Errorf("nginx link flags %q lack %q", ld, want)
			}
		}
		ossl, _ := p.Stage(lock.OpenSSL)
		for _, want := range []string{"no-shared", "no-tests", "no-docs"} {
			if !strings.Contains(ossl.Script, want) {
				t.Errorf("openssl script lacks %q", want)
			}
		}
		pcre, _ := p.Stage(lock.PCRE2)
		if !strings.Contains(pcre.Script, "--enable-jit") || !strings.Contains(pcre.Script, "--disable-shared") {
			t.Errorf("pcre2 script must build a static library with JIT:\n%s", pcre.Script)
		}
	}
}

// TestConfigureLineHasNoExecutorPaths: nginx prints its configure arguments (nginx -V) from
// a string compiled into the binary, so they must not contain $WORK, $OUT or $DEP_*, which
// differ between executors and runs.
func TestConfigureLineHasNoExecutorPaths(t *testing.T) {
	p, err := plan.New(testLock(t))
	if err != nil {
		t.Fatal(err)
	}
	ng, _ := p.Stage(lock.Nginx)
	// ./configure in a release tarball, ./auto/configure in a git tree.
	start := strings.Index(ng.Script, "configure \\\n")
	if start >= 0 {
		start = strings.LastIndex(ng.Script[:start], "\n") + 1
	}
	end := -1
	if start >= 0 {
		end = strings.Index(ng.Script[start:], "\nmake ")
	}
	if start < 0 || end < 0 {
		t.Fatalf("no ./configure ... make in the nginx script:\n%s", ng.Script)
	}
	configure := ng.Script[start : start+end]
	for _, v := range []string{"$WORK", "$OUT", "$DEP_", "$SRC", "${"} {
		if strings.Contains(configure, v) {
			t.Errorf("the configure line mentions %s:\n%s", v, configure)
		}
	}
	for _, name := range []string{"NGINX_CC_OPT", "NGINX_LD_OPT"} {
		if strings.Contains(env(ng, name), "$") || strings.Contains(env(ng, name), "/") {
			t.Errorf("%s = %q must not contain paths or variables", name, env(ng, name))
		}
	}
	for _, want := range []string{"--prefix=/etc/nginx", "--sbin-path=/usr/sbin/nginx", "--conf-path=/etc/nginx/nginx.conf",
		"--error-log-path=/dev/stderr", "--http-log-path=/dev/stdout", "--pid-path=/run/nginx/nginx.pid",
		"--http-client-body-temp-path=/var/cache/nginx/client_body", "--http-proxy-temp-path=/var/cache/nginx/proxy"} {
		if !strings.Contains(configure, want) {
			t.Errorf("configure line lacks %s", want)
		}
	}
}

func TestModules(t *testing.T) {
	l := testLock(t)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	ng, _ := p.Stage(lock.Nginx)
	for _, flag := range []string{"--with-threads", "--with-file-aio", "--with-http_ssl_module", "--with-http_v2_module",
		"--with-http_v3_module", "--with-http_realip_module", "--with-http_gunzip_module", "--with-http_gzip_static_module",
		"--with-http_slice_module", "--with-http_stub_status_module", "--with-http_sub_module", "--with-stream",
		"--with-stream_ssl_module", "--with-stream_ssl_preread_module", "--with-pcre-jit"} {
		if !strings.Contains(ng.Script, flag+" ") {
			t.Errorf("default nginx configure lacks %s", flag)
		}
	}
	if strings.Contains(ng.Script, "--with-mail ") {
		t.Error("mail is on by default")
	}

	p, err = plan.New(l, plan.WithModules("pcre-jit", "http_ssl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Modules, " "); got != "http_ssl pcre-jit" {
		t.Errorf("modules are ordered by the table, got %q", got)
	}
	ng, _ = p.Stage(lock.Nginx)
	if strings.Contains(ng.Script, "--with-http_v2_module") {
		t.Error("WithModules did not replace the default set")
	}
}

func TestErrors(t *testing.T) {
	l := testLock(t)
	bad := *l
	bad.Components = nil
	for _, tc := range []struct {
		name string
		lock *lock.Lock
		opts []plan.Option
		want string
	}{
		{"nil lock", nil, nil, "no lock"},
		{"invalid lock", &bad, nil, "invalid lock"},
		{"unknown cpu", l, []plan.Option{plan.WithCPU("haswell-ish")}, `CPU level "haswell-ish" is not known for amd64: use one of x86-64, x86-64-v2, x86-64-v3, x86-64-v4`},
		{"cpu of another arch", l, []plan.Option{plan.WithCPU("armv8.2-a")}, "not known for amd64"},
		{"x86 cpu on arm", l, []plan.Option{plan.WithPlatform(linuxARM64), plan.WithCPU("x86-64-v3")}, "not known for arm64: use one of armv8-a"},
		{"platform", l, []plan.Option{plan.WithPlatform(plan.Platform{OS: "darwin", Arch: "arm64"})}, `platform "darwin/arm64" is not supported: use linux/amd64 or linux/arm64`},
		{"module", l, []plan.Option{plan.WithModules("http_v9")}, `unknown nginx module "http_v9": known modules are`},
		{"module dependency", l, []plan.Option{plan.WithModules("stream_ssl")}, `nginx module "stream_ssl" needs module "stream"`},
		{"module not in the lock", l, []plan.Option{plan.WithModules("zstd")}, `nginx module "zstd" is built from the lock components zstd_nginx_module and zstd, which the lock does not have all of`},
		{"jobs", l, []plan.Option{plan.WithJobs(-1)}, "jobs -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plan.New(tc.lock, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNative(t *testing.T) {
	p, err := plan.New(testLock(t), plan.WithCPU("native"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Native || len(p.Warnings) == 0 || !strings.Contains(p.Warnings[0], "SIGILL") {
		t.Errorf("native plan: Native=%v Warnings=%v", p.Native, p.Warnings)
	}
	if !strings.Contains(p.Render(), "-march=native") {
		t.Error("native plan does not compile with -march=native")
	}
}

func TestShippedFiles(t *testing.T) {
	p, err := plan.New(testLock(t))
	if err != nil {
		t.Fatal(err)
	}
	ng, _ := p.Stage(lock.Nginx)
	paths := map[string]bool{}
	for _, f := range ng.Files {
		if len(f.Data) == 0 {
			t.Errorf("shipped file %s is empty", f.Path)
		}
		paths[f.Path] = true
		if !strings.Contains(ng.Script, "$WORK/"+f.Path) {
			t.Errorf("the nginx script does not install %s", f.Path)
		}
	}
	if !paths["files/nginx.conf"] || !paths["files/index.html"] {
		t.Errorf("shipped files = %v", paths)
	}
}

// withoutOptional is the test lock without its optional components: the four required ones.
func withoutOptional(t *testing.T) *lock.Lock {
	l := testLock(t)
	var keep []lock.Component
	for _, c := range l.Components {
		for _, n := range lock.ComponentOrder {
			if c.Name == n {
				keep = append(keep, c)
			}
		}
	}
	l.Components = keep
	return l
}

// withZstdModule is the test lock plus a zstd module component (its tarball is not on the
// test mirror: only Debian unstable has it; see .ci/fetch-sources).
func withZstdModule(t *testing.T) *lock.Lock {
	l := testLock(t)
	l.SetComponent(lock.Component{Name: lock.ZstdNginxModule, Version: "0.1.1",
		URL: "https://github.com/tokers/zstd-nginx-module/archive/refs/tags/0.1.1.tar.gz", SHA256: strings.Repeat("0", 64), Unsigned: "test"})
	return l
}

// catalogueLock is the module catalogue's test lock (pipeline/lock/testdata/modules.lock.json).
func catalogueLock(t *testing.T) *lock.Lock {
	t.Helper()
	l, err := lock.Load(filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "testdata", "modules.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The brotli and zstd modules: compiled in when the lock has them (and the module list
// allows), each library in its own stage, each module's source copied beside nginx's, and
// each one's config file shipped only then.
func TestCompressionModules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lock    *lock.Lock
		opts    []plan.Option
		modules []string // third-party modules expected
		xz      bool
	}{
		{"required components only", withoutOptional(t), nil, nil, false},
		{"test lock", testLock(t), nil, []string{"brotli"}, false},
		{"test lock, brotli not selected", testLock(t), []plan.Option{plan.WithModules("http_ssl")}, nil, false},
		{"with the zstd module", withZstdModule(t), nil, []string{"brotli", "zstd"}, true},
		{"zstd only", withZstdModule(t), []plan.Option{plan.WithModules("zstd")}, []string{"zstd"}, true},
		{"the catalogue's test lock", catalogueLock(t), nil, []string{"brotli", "geoip2", "echo", "fancyindex"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.New(tc.lock, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ng, _ := p.Stage(lock.Nginx)
			want := map[string]bool{}
			for _, m := range tc.modules {
				want[m] = true
			}
			for _, m := range plan.Modules {
				if len(m.Components) == 0 {
					continue
				}
				// A module's libraries (none for one that needs only nginx) and its
				// configuration file (none for one that ships none) follow the module.
				hasStage := want[m.Name]
				for _, lib := range m.Components[1:] {
					_, has := p.Stage(lib)
					hasStage = has
				}
				_, hasSource := p.Stage(m.Components[0])
				hasFlag := strings.Contains(ng.Script, m.Flag+" ")
				hasConf, shipped := want[m.Name], want[m.Name]
				if m.Conf != "" {
					hasConf = strings.Contains(ng.Script, "etc/nginx/"+m.Conf)
					shipped = false
					for _, f := range ng.Files {
						shipped = shipped || f.Path == "files/"+m.Conf
					}
				}
				inList := strings.Contains(" "+strings.Join(p.Modules, " ")+" ", " "+m.Name+" ")
				for what, got := range map[string]bool{"library stage": hasStage, "source stage": hasSource,
					"--add-module": hasFlag, "conf install": hasConf, "conf file": shipped, "Plan.Modules": inList} {
					if got != want[m.Name] {
						t.Errorf("module %s: %s present = %v, want %v", m.Name, what, got, want[m.Name])
					}
				}
				if want[m.Name] {
					for _, c := range m.Components {
						if !strings.Contains(" "+strings.Join(ng.Deps, " ")+" ", " "+c+" ") {
							t.Errorf("nginx stage does not depend on %s", c)
						}
					}
				}
			}
			// A module that ships no configuration installs none (no bare files/ directory).
			if strings.Contains(ng.Script, `"$WORK/files/" `) {
				t.Errorf("the nginx stage installs a configuration file with no name:\n%s", ng.Script)
			}
			hasXZ := strings.Contains(strings.Join(p.BuildPackages, " "), "xz-utils")
			if hasXZ != tc.xz {
				t.Errorf("xz-utils in build packages = %v, want %v (only a .tar.xz source needs it)", hasXZ, tc.xz)
			}
			// The configure line names modules by relative paths only (nginx -V prints it).
			if strings.Contains(ng.Script, "--add-module=$") || strings.Contains(ng.Script, "--add-module=/") {
				t.Error("an --add-module flag names an absolute or executor path")
			}
		})
	}
}

// The AWS-LC variant's optimization modes: lto compiles zlib-ng, PCRE2 and AWS-LC with -flto
// and archives them through gcc-ar (CMake told so: it ignores AR); pgo instruments all three
// and nginx, trains nginx against the instrumented libraries, and compiles all four with the
// profile, from a recorded one without any training stage; auto is none until the lock
// records a profile for the plan, then pgo.
func TestOptimizeWithAWSLC(t *testing.T) {
	l, err := lock.Load(testenv.AWSLCTestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	envOf := func(s plan.Stage, name string) string {
		for _, e := range s.Env {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	lto, err := plan.New(l, plan.WithOptimize(plan.OptimizeLTO))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{lock.ZlibNG, lock.PCRE2, lock.AWSLC} {
		s, ok := lto.Stage(name)
		if !ok || !strings.Contains(envOf(s, "CFLAGS"), "-flto=auto") || envOf(s, "AR") != "gcc-ar" {
			t.Errorf("lto: stage %s does not compile with -flto through gcc-ar: %+v", name, s.Env)
		}
	}
	if s, _ := lto.Stage(lock.AWSLC); !strings.Contains(s.Script, `-DCMAKE_AR="$(command -v "$AR")"`) {
		t.Error("lto: AWS-LC's CMake archives without the LTO plugin")
	}
	none, _ := plan.New(l, plan.WithOptimize(plan.OptimizeNone))
	if s, _ := none.Stage(lock.AWSLC); strings.Contains(s.Script, "CMAKE_AR") || strings.Contains(envOf(s, "CFLAGS"), "-flto") {
		t.Error("none: AWS-LC's stage has the lto mode's archiver or flag")
	}

	pgo, err := plan.New(l, plan.WithOptimize(plan.OptimizePGO))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range pgo.Stages {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), "zlib_ng-instrumented pcre2-instrumented aws_lc-instrumented pgo-train zlib_ng pcre2 aws_lc nginx"; got != want {
		t.Errorf("pgo stages: %s, want %s", got, want)
	}
	train, _ := pgo.Stage(plan.StagePGOTrain)
	for _, name := range []string{lock.ZlibNG, lock.PCRE2, lock.AWSLC} {
		in, _ := pgo.Stage(name + "-instrumented")
		if !strings.Contains(envOf(in, "CFLAGS"), "-fprofile-generate=/pgo/"+name) || !strings.Contains(in.Script, "-fprofile-prefix-path=$WORK/src") {
			t.Errorf("stage %s-instrumented is not instrumented: %q", name, envOf(in, "CFLAGS"))
		}
		if !strings.Contains(train.Script, "export "+plan.DepVar(name)+`="$`+plan.DepVar(name+"-instrumented")+`"`) {
			t.Errorf("pgo-train does not link the instrumented %s", name)
		}
		s, _ := pgo.Stage(name)
		if !strings.Contains(envOf(s, "CFLAGS"), "-fprofile-use") || !strings.Contains(s.Script, `"$DEP_PGO_TRAIN/pgo/`+name+`"/*.gcda`) {
			t.Errorf("stage %s does not compile with the profile", name)
		}
	}
	if !strings.Contains(train.Script, "for c in zlib_ng pcre2 aws_lc nginx; do") {
		t.Errorf("pgo-train does not keep every component's counters:\n%s", train.Script)
	}

	if auto, _ := plan.New(l); auto.Optimize != plan.OptimizeNone {
		t.Errorf("auto with AWS-LC and no recorded profile is %q, want none", auto.Optimize)
	}
	withProfile := *l
	withProfile.Profiles = []lock.Profile{{Platform: "linux/amd64", Training: pgo.TrainingKey, URL: "https://example.org/pgo/variant-amd64.tar.gz", SHA256: strings.Repeat("cd", 32)}}
	auto, err := plan.New(&withProfile)
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, s := range auto.Stages {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), "pgo-profile zlib_ng pcre2 aws_lc nginx"; auto.Optimize != plan.OptimizePGO || auto.ProfileSHA256 == "" || got != want || len(auto.Warnings) != 0 {
		t.Errorf("auto with the variant's recorded profile: mode %q, stages %s (want %s), warnings %q", auto.Optimize, got, want, auto.Warnings)
	}
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := p.Stage(lock.Nginx)
	if !strings.Contains(s.Script, "./auto/configure \\\n") || !strings.Contains(s.Script, `$DEP_AWS_LC/usr/include`) {
		t.Errorf("nginx stage of the git tree does not run ./auto/configure against AWS-LC:\n%s", s.Script)
	}
}
