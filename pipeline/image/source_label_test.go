package image

import (
	"encoding/json"
	"strings"
	"testing"
)

// The source label is what WithSource says, in the annotations, the config's labels and
// the SBOM's namespace; with no source given there is no label at all, and the SBOM names
// no repository (it used to name this project's, whoever built the image).
func TestSourceLabelFromOptions(t *testing.T) {
	for _, tc := range []struct {
		name, source, namespace string
	}{
		{"fork", "https://github.com/acme/edge-nginx", "https://github.com/acme/edge-nginx/spdx/"},
		{"unknown", "", "https://spdx.org/spdxdocs/nginx-forge-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := assembleSynthetic(t, "amd64", WithSource(tc.source))
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			ann, inAnns := m.Annotations[annotationSource]
			label, inLabels := cf.Config.Labels[annotationSource]
			if tc.source == "" {
				if inAnns || inLabels {
					t.Errorf("no source given, yet annotation %q and label %q", ann, label)
				}
			} else if ann != tc.source || label != tc.source {
				t.Errorf("annotation %q, label %q; want %q", ann, label, tc.source)
			}
			raw, err := SBOM(img, testLock(t))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				DocumentNamespace string `json:"documentNamespace"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			d, _ := img.Digest()
			if doc.DocumentNamespace != tc.namespace+d.Hex {
				t.Errorf("SBOM namespace %q, want %q", doc.DocumentNamespace, tc.namespace+d.Hex)
			}
			if strings.Contains(string(raw), "nginx-forge/nginx-forge") {
				t.Errorf("the SBOM names this project's repository:\n%s", raw)
			}
		})
	}
}

// The same repository and revision give the same digest; another repository, or none,
// gives another: the label is an input like the lock.
func TestSourceLabelReproducible(t *testing.T) {
	digest := func(opts ...Option) string {
		d, err := assembleSynthetic(t, "amd64", opts...).Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	a, b := digest(WithSource("https://github.com/acme/edge-nginx")), digest(WithSource("https://github.com/acme/edge-nginx"))
	if a != b {
		t.Errorf("the same inputs gave %s and %s", a, b)
	}
	if other := digest(WithSource("https://github.com/other/nginx")); other == a {
		t.Errorf("another repository gave the same digest %s", a)
	}
	if none := digest(WithSource("")); none == a {
		t.Errorf("no repository gave the same digest %s", a)
	}
}

// CheckSource admits an https repository URL and nothing that could carry a credential or a
// local path into a label; its messages never repeat a credential.
func TestCheckSource(t *testing.T) {
	for _, ok := range []string{"", "https://github.com/acme/edge-nginx", "https://git.example.com:8443/group/sub/repo"} {
		if err := CheckSource(ok); err != nil {
			t.Errorf("CheckSource(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{
		"https://x-access-token:ghs_SECRET@github.com/acme/edge-nginx",
		"https://ghs_SECRET@github.com/acme/edge-nginx",
		"http://github.com/acme/edge-nginx",
		"git@github.com:acme/edge-nginx.git",
		"/work/main",
		"file:///work/main",
		"https://github.com",
		"https://github.com/",
		"https://github.com/acme/edge-nginx?token=ghs_SECRET",
		"https://github.com/acme/edge-nginx#x",
		"https://github.com/acme/edge nginx",
		"https:github.com/acme",
	} {
		err := CheckSource(bad)
		if err == nil {
			t.Errorf("CheckSource(%q) = nil", bad)
			continue
		}
		if strings.Contains(err.Error(), "ghs_SECRET") {
			t.Errorf("CheckSource(%q) repeats the credential: %v", bad, err)
		}
	}
}
