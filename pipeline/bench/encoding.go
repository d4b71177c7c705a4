package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
)

// The third-party compression modules pipeline/plan can compile in, as nginx -V lists them.
// Duplicated from the plan on purpose: this package imports nothing of ours.
var encodingModules = []struct {
	encoding string
	flag     string
	prefix   string // of the module's directives
}{
	{"br", "--add-module=../ngx_brotli", "brotli"},
	{"zstd", "--add-module=../zstd_nginx_module", "zstd"},
}

// encodingLevels are the compression levels the benchmark's /gz/ location uses for br and
// zstd: the shipped config's (pipeline/plan/files/compression.d), so the modern-browser
// scenario measures what the image does. Keep them equal.
var encodingLevels = map[string]int{"br": 4, "zstd": 3}

// Encodings lists the on-the-fly encodings besides gzip that the binary has modules for.
func (b BinaryInfo) Encodings() []string {
	var out []string
	for _, m := range encodingModules {
		if strings.Contains(" "+b.Configure+" ", " "+m.flag+" ") {
			out = append(out, m.encoding)
		}
	}
	return out
}

// EncodingDirectives are the /gz/ location's lines for c.Encodings (without the ";").
func (c Config) EncodingDirectives() []string {
	var out []string
	for _, e := range c.Encodings {
		for _, m := range encodingModules {
			if m.encoding != e {
				continue
			}
			out = append(out,
				m.prefix+" on",
				m.prefix+"_types application/json",
				m.prefix+"_min_length 1024",
				fmt.Sprintf("%s_comp_level %d", m.prefix, encodingLevels[e]))
		}
	}
	return out
}

// ModernBrowser is what current browsers send.
const ModernBrowser = "gzip, deflate, br, zstd"

// decodeAs decodes body by its Content-Encoding, one of those ModernBrowser offers.
func decodeAs(encoding string, body []byte) ([]byte, error) {
	if encoding != "gzip" && encoding != "br" && encoding != "zstd" {
		return nil, fmt.Errorf("Content-Encoding %q is not one the benchmark asked for (%s)", encoding, ModernBrowser)
	}
	return toolbox.Decode(encoding, body)
}

// checkModernBrowser accepts any encoding the request offered that compresses (a server
// without brotli or zstd answers gzip), as long as the body decodes to exactly the JSON.
func checkModernBrowser(resp *http.Response, body []byte) error {
	ce := resp.Header.Get("Content-Encoding")
	plain, err := decodeAs(ce, body)
	if err != nil {
		return fmt.Errorf("Content-Encoding %q: %w", ce, err)
	}
	if !bytes.Equal(plain, jsonDocBytes()) {
		return fmt.Errorf("the %s body decodes to %d bytes that are not the %d-byte JSON document", ce, len(plain), len(jsonDocBytes()))
	}
	return nil
}
