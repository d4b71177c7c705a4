//go:build integration

package plan_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The shipped nginx.conf passes `nginx -t` on a real nginx without the brotli and zstd
// modules (Debian's, as the image's nginx would be built without them) when compression.d
// is empty, as an image without the modules ships it; with brotli.conf in it the same nginx
// refuses it, so the test would catch a module directive in the always-shipped part.
func TestShippedConfigWithoutCompressionModules(t *testing.T) {
	nginx := testenv.Tool(t, "/usr/sbin/nginx", "nginx (Debian's, a build without brotli and zstd)")
	root := t.TempDir()
	conf, err := os.ReadFile(filepath.Join("files", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// Every absolute path of the runtime contract, moved under root.
	text := string(conf)
	for _, p := range []string{"/etc/nginx", "/var/cache/nginx", "/run/nginx", "/usr/share/nginx"} {
		text = strings.ReplaceAll(text, p, root+p)
	}
	for _, d := range []string{"etc/nginx/conf.d", "etc/nginx/tls", "etc/nginx/compression.d", "var/cache/nginx", "run/nginx", "usr/share/nginx/html"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel string, b []byte) {
		if err := os.WriteFile(filepath.Join(root, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/nginx/nginx.conf", []byte(text))
	write("etc/nginx/mime.types", []byte("types {\n    text/html html;\n}\n"))
	test := func() (string, error) {
		out, err := exec.Command(nginx, "-t", "-p", root+"/", "-c", filepath.Join(root, "etc/nginx/nginx.conf")).CombinedOutput()
		return string(out), err
	}
	if out, err := test(); err != nil {
		t.Fatalf("nginx -t of the shipped nginx.conf with an empty compression.d, on an nginx without the modules: %v\n%s", err, out)
	}
	br, err := os.ReadFile(filepath.Join("files", "compression.d", "brotli.conf"))
	if err != nil {
		t.Fatal(err)
	}
	write("etc/nginx/compression.d/brotli.conf", br)
	out, err := test()
	if err == nil || !strings.Contains(out, `unknown directive "brotli"`) {
		t.Fatalf("with brotli.conf, an nginx without the module should refuse the config (unknown directive \"brotli\"); got %v\n%s", err, out)
	}
}
