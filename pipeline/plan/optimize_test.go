package plan_test

import (
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/dockerfile"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// The optimization modes: none is the plan as it always was; lto adds -flto to every stage
// and the LTO archiver; pgo trains and uses a profile through stages only, so the container
// steps (Dagger's and the Dockerfile's: ContainerEnv and ContainerScript) carry it too.
func TestOptimizeModes(t *testing.T) {
	l := testLock(t)
	none, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	explicit, err := plan.New(l, plan.WithOptimize(plan.OptimizeNone))
	if err != nil {
		t.Fatal(err)
	}
	// The default (auto) without a recorded profile is none.
	if plan.DefaultOptimize != plan.OptimizeAuto || none.Optimize != plan.OptimizeNone || none.Render() != explicit.Render() {
		t.Errorf("the default plan (%s) of a lock without a recorded profile is not the none plan", plan.DefaultOptimize)
	}
	if _, err := plan.New(l, plan.WithOptimize("O3")); err == nil {
		t.Error("an unknown mode was accepted")
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
	for _, s := range lto.Stages {
		flags := envOf(s, "CFLAGS") + envOf(s, "NGINX_CC_OPT")
		if s.Name != lock.NgxBrotli && !strings.Contains(flags, "-flto") {
			t.Errorf("lto: stage %s compiles without -flto: %q", s.Name, flags)
		}
		if envOf(s, "CFLAGS") != "" && envOf(s, "AR") != "gcc-ar" {
			t.Errorf("lto: stage %s makes its library without gcc-ar", s.Name)
		}
		if strings.Contains(flags, "profile") {
			t.Errorf("lto: stage %s has profile flags: %q", s.Name, flags)
		}
	}

	pgo, err := plan.New(l, plan.WithOptimize(plan.OptimizePGO))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range pgo.Stages {
		names = append(names, s.Name)
	}
	order := strings.Join(names, " ")
	if !strings.Contains(order, "openssl-instrumented") || !strings.HasSuffix(order, "pgo-train openssl nginx") {
		t.Errorf("pgo stages: %s", order)
	}
	train, _ := pgo.Stage(plan.StagePGOTrain)
	ossl, _ := pgo.Stage(lock.OpenSSL)
	ngx, _ := pgo.Stage(lock.Nginx)
	if !strings.Contains(envOf(train, "NGINX_CC_OPT"), "-fprofile-generate=/pgo/nginx") ||
		!strings.Contains(plan.ContainerScript(train), `. "$WORK/files/train/train.sh"`) {
		t.Error("pgo-train does not build an instrumented nginx and run the training")
	}
	for _, s := range []plan.Stage{ossl, ngx} {
		flags := envOf(s, "CFLAGS") + envOf(s, "NGINX_CC_OPT")
		if !strings.Contains(flags, "-fprofile-use ") || strings.Contains(flags, "/") {
			t.Errorf("stage %s: profile-use flags %q (no path may be in them: OpenSSL and nginx record them)", s.Name, flags)
		}
		if !strings.Contains(strings.Join(s.Deps, " "), plan.StagePGOTrain) || !strings.Contains(plan.ContainerScript(s), `"$DEP_PGO_TRAIN/pgo/`+s.Name+`"/*.gcda`) {
			t.Errorf("stage %s does not take its profile from pgo-train", s.Name)
		}
	}
	if !strings.Contains(strings.Join(pgo.BuildPackages, " "), "curl") {
		t.Error("the builder has no curl for the training")
	}
	df, err := dockerfile.Render(pgo, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FROM builder AS pgo-train", "COPY --from=pgo-train /out/pgo-train/ /deps/pgo-train/", "train.sh", "-fprofile-use"} {
		if !strings.Contains(string(df), want) {
			t.Errorf("the pgo Dockerfile lacks %q", want)
		}
	}
}

// A recorded profile (lock: profiles) whose training key is the plan's replaces the training:
// stage pgo-profile unpacks it, OpenSSL and nginx read it, nothing trains, nothing warns; a
// profile recorded for another plan is not used and the plan says why.
func TestRecordedProfile(t *testing.T) {
	l := testLock(t)
	trained, err := plan.New(l, plan.WithOptimize(plan.OptimizePGO))
	if err != nil {
		t.Fatal(err)
	}
	if len(trained.TrainingKey) != 64 || trained.ProfileSHA256 != "" || !strings.Contains(strings.Join(trained.Warnings, " "), "not reproducible") {
		t.Fatalf("trained plan: key %q, profile %q, warnings %q", trained.TrainingKey, trained.ProfileSHA256, trained.Warnings)
	}
	rec := lock.Profile{Platform: "linux/amd64", Training: trained.TrainingKey, URL: "https://example.org/pgo/nginx-pgo-amd64.tar", SHA256: strings.Repeat("ab", 32)}
	withProfile := *l
	withProfile.Profiles = []lock.Profile{rec}
	if err := withProfile.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(&withProfile, plan.WithOptimize(plan.OptimizePGO))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Stages {
		names = append(names, s.Name)
	}
	if order := strings.Join(names, " "); strings.Contains(order, plan.StagePGOTrain) || strings.Contains(order, plan.StageOpenSSLInstrumented) || !strings.HasSuffix(order, "pgo-profile openssl nginx") {
		t.Errorf("stages with a recorded profile: %s", order)
	}
	if p.ProfileSHA256 != rec.SHA256 || p.TrainingKey != trained.TrainingKey || len(p.Warnings) != 0 {
		t.Errorf("profile %q, key %q, warnings %q", p.ProfileSHA256, p.TrainingKey, p.Warnings)
	}
	prof, _ := p.Stage(plan.StagePGOProfile)
	if prof.Source.Component != "pgo-profile-amd64" || prof.Source.SHA256 != rec.SHA256 || prof.Source.FileName != "nginx-pgo-amd64.tar" {
		t.Errorf("pgo-profile source: %+v", prof.Source)
	}
	if !strings.Contains(prof.Script, `"$OUT/pgo/compiler"`) {
		t.Error("stage pgo-profile does not check the profile's compiler")
	}
	for _, name := range []string{lock.OpenSSL, lock.Nginx} {
		s, _ := p.Stage(name)
		if !strings.Contains(strings.Join(s.Deps, " "), plan.StagePGOProfile) || !strings.Contains(s.Script, `"$DEP_PGO_PROFILE/pgo/`+name+`"/*.gcda`) {
			t.Errorf("stage %s does not take its profile from pgo-profile", name)
		}
	}
	if strings.Contains(strings.Join(p.BuildPackages, " "), "curl") {
		t.Error("a build from a recorded profile installs the training's curl")
	}
	df, err := dockerfile.Render(p, &withProfile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "ADD --checksum=sha256:"+rec.SHA256+" "+rec.URL+" /src/nginx-pgo-amd64.tar") || strings.Contains(string(df), "train.sh") {
		t.Error("the Dockerfile does not fetch the recorded profile, or still trains")
	}

	// The default (auto) builds from it; with another CPU level (another training key) the
	// default is none and trains nothing.
	auto, err := plan.New(&withProfile)
	if err != nil {
		t.Fatal(err)
	}
	if auto.Optimize != plan.OptimizePGO || auto.ProfileSHA256 != rec.SHA256 || auto.Render() != p.Render() {
		t.Errorf("auto with a recorded profile: mode %q, profile %q", auto.Optimize, auto.ProfileSHA256)
	}
	autoV4, err := plan.New(&withProfile, plan.WithCPU("x86-64-v4"))
	if err != nil {
		t.Fatal(err)
	}
	if autoV4.Optimize != plan.OptimizeNone || len(autoV4.Warnings) != 0 {
		t.Errorf("auto for another plan: mode %q, warnings %q", autoV4.Optimize, autoV4.Warnings)
	}

	// Recorded for another plan (another CPU level): trained, and the warning says why.
	v4, err := plan.New(&withProfile, plan.WithOptimize(plan.OptimizePGO), plan.WithCPU("x86-64-v4"))
	if err != nil {
		t.Fatal(err)
	}
	if v4.TrainingKey == trained.TrainingKey || v4.ProfileSHA256 != "" {
		t.Errorf("a v4 plan took the v3 profile (key %q)", v4.TrainingKey)
	}
	if _, ok := v4.Stage(plan.StagePGOTrain); !ok || !strings.Contains(strings.Join(v4.Warnings, " "), "trained for another plan") {
		t.Errorf("v4 plan: no training, or no warning about the unused profile: %q", v4.Warnings)
	}
}

// The training key covers what the counters depend on and nothing else: the same options
// give the same key, the make parallelism does not change it, the CPU level and the module
// set do.
func TestTrainingKey(t *testing.T) {
	l := testLock(t)
	key := func(opts ...plan.Option) string {
		t.Helper()
		p, err := plan.New(l, append(opts, plan.WithOptimize(plan.OptimizePGO))...)
		if err != nil {
			t.Fatal(err)
		}
		return p.TrainingKey
	}
	base := key()
	if key() != base || key(plan.WithJobs(7)) != base {
		t.Error("the training key changes with nothing, or with the make jobs")
	}
	if key(plan.WithCPU("x86-64-v2")) == base || key(plan.WithModules()) == base {
		t.Error("the training key ignores the CPU level or the modules")
	}
	lto, _ := plan.New(l, plan.WithOptimize(plan.OptimizeLTO))
	if lto.TrainingKey != "" {
		t.Errorf("an lto plan has a training key %q", lto.TrainingKey)
	}
	tr, err := plan.NewTraining(l)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Final != plan.StagePGOTrain || tr.TrainingKey != base {
		t.Errorf("training plan: final %q, key %q (want %q)", tr.Final, tr.TrainingKey, base)
	}
	for _, s := range tr.Stages {
		if s.Name == lock.OpenSSL || s.Name == lock.Nginx {
			t.Errorf("the training plan builds %s", s.Name)
		}
	}
}
