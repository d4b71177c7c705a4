package image

import (
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// An image says what it was built as: ci smoke --image checks it against that record
// without being given the lock or the modules (issue 21).
func TestReadRecordRoundTrip(t *testing.T) {
	l := testLock(t)
	for _, tc := range []struct {
		name string
		opts []Option
		want []string
	}{
		{"default modules", nil, plan.DefaultModulesOf(l)},
		{"--modules", []Option{WithModules([]string{"http_ssl", "http_v2"})}, []string{"http_ssl", "http_v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := assembleSynthetic(t, "amd64", tc.opts...)
			rec, ok, err := ReadRecord(img)
			if err != nil || !ok {
				t.Fatalf("ReadRecord: ok %v, %v", ok, err)
			}
			if !slices.Equal(rec.Modules, tc.want) {
				t.Errorf("modules = %q, want %q", rec.Modules, tc.want)
			}
			for _, name := range []string{lock.Nginx, lock.OpenSSL, lock.PCRE2} {
				c, _ := l.Component(name)
				if rec.Versions[name] != c.Version {
					t.Errorf("%s version = %q, want %q", name, rec.Versions[name], c.Version)
				}
			}
			if _, ok := rec.Versions[Libcrypt]; ok {
				t.Errorf("libcrypt (a builder package, not a lock component) is among the versions: %v", rec.Versions)
			}
		})
	}
}

func TestReadRecordFromLabelsAndOfOtherImages(t *testing.T) {
	cf, err := assembleSynthetic(t, "amd64").ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// Only the config's labels, as on an image whose manifest annotations were dropped.
	labelsOnly, err := mutate.ConfigFile(empty.Image, cf)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadRecord(labelsOnly)
	if err != nil || !ok || rec.Versions[lock.Nginx] != "1.26.3" || !slices.Contains(rec.Modules, plan.ModuleHTTP3) {
		t.Errorf("from the labels: %+v, ok %v, %v", rec, ok, err)
	}
	// An image this tool did not assemble records nothing.
	if rec, ok, err := ReadRecord(empty.Image); err != nil || ok {
		t.Errorf("an empty image: %+v, ok %v, %v", rec, ok, err)
	}
	// One assembled before the modules annotation: versions, and modules unknown (nil).
	anns := map[string]string{}
	for k, v := range cf.Config.Labels {
		if k != AnnotationModules {
			anns[k] = v
		}
	}
	rec, ok, err = ReadRecord(mutate.Annotations(empty.Image, anns).(v1.Image))
	if err != nil || !ok || rec.Versions[lock.OpenSSL] != "3.5.7" || rec.Modules != nil {
		t.Errorf("without the modules annotation: %+v, ok %v, %v", rec, ok, err)
	}
}
