package plan_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// directives are the first words of a config file's statements (comments dropped).
func directives(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	cont := false
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) > 0 && !cont {
			out = append(out, f[0])
		}
		cont = len(f) > 0 && !strings.HasSuffix(strings.TrimSpace(line), ";") && !strings.HasSuffix(strings.TrimSpace(line), "{") && !strings.HasSuffix(strings.TrimSpace(line), "}")
	}
	return out
}

// The modules' directives live only in their compression.d files, each file only its own
// module's, so nginx.conf never names a directive a build without the modules lacks.
func TestCompressionDirectivesOnlyInTheirFiles(t *testing.T) {
	for _, d := range directives(t, filepath.Join("files", "nginx.conf")) {
		if strings.HasPrefix(d, "brotli") || strings.HasPrefix(d, "zstd") {
			t.Errorf("nginx.conf uses %s, which only a build with the module knows: move it to files/compression.d", d)
		}
	}
	for _, m := range plan.Modules {
		if m.Conf == "" {
			continue
		}
		prefix := map[string]string{"brotli": "brotli", "zstd": "zstd"}[m.Name]
		ds := directives(t, filepath.Join("files", m.Conf))
		if len(ds) == 0 {
			t.Errorf("%s has no directives", m.Conf)
		}
		for _, d := range ds {
			if !strings.HasPrefix(d, prefix) {
				t.Errorf("%s uses %s: it is shipped only with the %s module, so it may only hold that module's directives", m.Conf, d, m.Name)
			}
		}
	}
}

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
