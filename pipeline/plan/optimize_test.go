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
	if none.Optimize != plan.DefaultOptimize || none.Render() != explicit.Render() {
		t.Errorf("the default plan is not the %s plan", plan.DefaultOptimize)
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
