package plan_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
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
