package host

import "github.com/nginx-forge/nginx-forge/pipeline/progress"

// Option configures the host engine: its executor (New, NewEngine) and SmokeImage, each
// reading its own settings.
type Option func(*options)

type options struct {
	cacheDir string
	sink     progress.Sink
	jobs     int
	// confD and noTLS are how the host engine's Smoke runs an image beyond the suite's
	// options (ci smoke's --conf-d and --no-tls).
	confD string
	noTLS bool
}

// makeOptions applies opts over the defaults, here and nowhere else: DefaultCacheDir, no
// progress.
func makeOptions(opts []Option) options {
	o := options{cacheDir: DefaultCacheDir, sink: progress.Discard}
	for _, opt := range opts {
		opt(&o)
	}
	if o.sink == nil {
		o.sink = progress.Discard
	}
	return o
}

// WithCacheDir sets the directory stage outputs are cached in (default DefaultCacheDir).
// Several processes may share it: a lock per stage key makes the first one build and the
// others wait and reuse its output.
func WithCacheDir(dir string) Option { return func(o *options) { o.cacheDir = dir } }

// WithProgress sends the stages' cache decisions and timings to sink as Detail notes
// (default: discarded).
func WithProgress(sink progress.Sink) Option { return func(o *options) { o.sink = sink } }

// WithJobs sets the make parallelism; it overrides the plan's Jobs. 0 means the plan's, or
// the number of CPUs.
func WithJobs(n int) Option { return func(o *options) { o.jobs = n } }

// WithSmokeConfD mounts dir read-only at /etc/nginx/conf.d when the engine smoke-tests an
// image: test your server blocks against the image (a broken one fails "nginx -t").
func WithSmokeConfD(dir string) Option { return func(o *options) { o.confD = dir } }

// WithSmokeNoTLS smoke-tests images without the generated certificate (the TLS checks are
// then skipped).
func WithSmokeNoTLS() Option { return func(o *options) { o.noTLS = true } }
