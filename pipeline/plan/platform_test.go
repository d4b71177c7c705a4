package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// linuxARM64 is the second supported platform, as --platform linux/arm64 parses.
var linuxARM64 = func() plan.Platform {
	p, err := plan.ParsePlatform("linux/arm64")
	if err != nil {
		panic(err)
	}
	return p
}()

// TestParsePlatforms: --platform's list is parsed once into plan.Platform, the default is the
// first supported platform, and every malformed list is refused naming what is wrong and the
// supported set (issue 47, item 7).
func TestParsePlatforms(t *testing.T) {
	if got := plan.SupportedList(); got != "linux/amd64 or linux/arm64" || !strings.HasPrefix(got, plan.DefaultPlatform.String()+" ") {
		t.Errorf("SupportedList() = %q: want the default first, then linux/arm64", got)
	}
	got, err := plan.ParsePlatforms("linux/arm64, linux/amd64")
	if want := []plan.Platform{linuxARM64, plan.DefaultPlatform}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParsePlatforms = %v, %v; want %v", got, err, want)
	}
	fifty := strings.TrimSuffix(strings.Repeat("linux/amd64,", 50), ",")
	for in, want := range map[string]string{
		"":                        "names no platform",
		" , ":                     "names no platform",
		"linux/amd64,":            "has an empty entry",
		"linux/amd64,,":           "has 3 entries, more than the 2 supported platforms",
		"linux/arm64,linux/arm64": "names linux/arm64 twice",
		fifty:                     "has 50 entries",
		"linux/s390x":             `"linux/s390x" is not supported`,
		"linux/arm64/v8":          `"linux/arm64/v8" is not supported`,
	} {
		_, err := plan.ParsePlatforms(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "linux/amd64 or linux/arm64") {
			t.Errorf("ParsePlatforms(%q) = %v, want an error with %q and the supported platforms", in, err, want)
		}
	}
}

// TestModuleFlagsAreThePlans: ModuleFlags (ci smoke's expectations, made without a plan) are
// the configure flags of the modules New's plan builds, for each lock and module list, and
// refuse what New refuses.
func TestModuleFlagsAreThePlans(t *testing.T) {
	for _, l := range []*lock.Lock{lock.Default(), testLock(t)} {
		for _, changes := range [][]string{nil, {"+mail", "+mail_ssl"}, {"-http_v3", "-stream_ssl_preread"}, {"http_ssl", "http_v2"}, {"+brotli"}, {"mail_ssl"}, {"gopher"}} {
			var opts []plan.Option
			if changes != nil {
				opts = append(opts, plan.WithModules(changes...))
			}
			p, planErr := plan.New(l, opts...)
			got, err := plan.ModuleFlags(l, changes)
			if (err == nil) != (planErr == nil) || planErr != nil && !strings.HasSuffix(planErr.Error(), err.Error()) {
				t.Errorf("%v: ModuleFlags error %v, New's %v", changes, err, planErr)
				continue
			}
			if planErr != nil {
				continue
			}
			want, err := plan.ConfigureFlags(p.Modules)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("%v: ModuleFlags = %q, the plan's flags %q (%v)", changes, got, want, err)
			}
		}
	}
}
