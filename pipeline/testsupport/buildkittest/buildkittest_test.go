package buildkittest

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Lines as buildctl --progress=plain prints them (taken from real builds of the rendered
// Dockerfile): RUN steps that executed (with and without output), one that came from the
// cache, and FROM, WORKDIR and ADD steps, which are not RUN steps.
const sampleLog = `#7 [builder 1/2] FROM 127.0.0.1:5055/debian@sha256:019396b641b9f2a39e04f8d0a925661368bd14c091bf2ebb9c32baf71bf1822e
#7 resolve 127.0.0.1:5055/debian@sha256:019396b641b9f2a39e04f8d0a925661368bd14c091bf2ebb9c32baf71bf1822e done
#7 DONE 2.8s
#13 [builder 2/2] RUN --mount=type=cache,target=/var/cache/apt,sharing=locked <<'NGINX_FORGE_EOF' (rm -f /etc/apt/apt.conf.d/docker-clean...)
#13 0.482 Get:1 http://debian.mirror.invalid/debian trixie InRelease [140 kB]
#13 1.851 Fetched 16.3 MB in 2s (9602 kB/s)
#13 DONE 25.2s
#15 [zlib 2/4] WORKDIR /out/zlib
#15 DONE 0.1s
#16 [nginx 1/9] ADD --checksum=sha256:69ee2b237744036e61d24b836668aad3040dda461fe6f570f1787eab570c75aa http://127.0.0.1:40261/nginx-1.26.3.tar.gz /src/nginx-1.26.3.tar.gz
#16 DONE 0.1s
#24 [openssl 4/4] RUN <<'NGINX_FORGE_EOF' (export JOBS="${JOBS:-$(nproc)}"...)
#24 CACHED
#30 [rootfs 2/2] RUN chown -R 65532:65532 /rootfs/var/cache/nginx /rootfs/run/nginx
#30 DONE 0.3s
#31 [internal] load metadata for 127.0.0.1:5055/debian
#31 DONE 0.1s
#25 [pcre2 4/4] RUN <<'NGINX_FORGE_EOF' (export JOBS="${JOBS:-$(nproc)}"...)
#25 13.91 checking for strerror... yes
#24 [openssl 4/4] RUN <<'NGINX_FORGE_EOF' (export JOBS="${JOBS:-$(nproc)}"...)
#25 DONE 59.6s
#38 exporting to image
#38 pushing layers 0.2s done
#38 DONE 0.7s
`

func TestExecutedRuns(t *testing.T) {
	got := ExecutedRuns(sampleLog)
	want := []string{
		`[builder 2/2] RUN --mount=type=cache,target=/var/cache/apt,sharing=locked <<'NGINX_FORGE_EOF' (rm -f /etc/apt/apt.conf.d/docker-clean...)`,
		"[rootfs 2/2] RUN chown -R 65532:65532 /rootfs/var/cache/nginx /rootfs/run/nginx",
		`[pcre2 4/4] RUN <<'NGINX_FORGE_EOF' (export JOBS="${JOBS:-$(nproc)}"...)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ExecutedSteps = %q\nwant %q", got, want)
	}
	// The same log with every step's DONE turned into CACHED has no executed step.
	done := regexp.MustCompile(`^(#[0-9]+) DONE .*$`)
	var cached []string
	for _, line := range strings.Split(sampleLog, "\n") {
		cached = append(cached, done.ReplaceAllString(line, "$1 CACHED"))
	}
	if got := ExecutedRuns(strings.Join(cached, "\n")); len(got) != 0 {
		t.Errorf("a log whose steps all came from the cache gave executed steps %q", got)
	}
}

func TestConfig(t *testing.T) {
	c := config(Options{PlainHTTP: []string{"127.0.0.1:5001", "127.0.0.1:5000"}})
	for _, want := range []string{`networkMode = "host"`, `binary = "runc"`, "[worker.containerd]\n  enabled = false",
		"[registry.\"127.0.0.1:5000\"]\n  http = true\n\n[registry.\"127.0.0.1:5001\"]\n  http = true\n"} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
}
