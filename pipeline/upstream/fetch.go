package upstream

import (
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// FetchConfig says where new releases are downloaded from and cached, as plain values
// (`ci check-updates` flags).
type FetchConfig struct {
	Mirror   string // every file as Mirror/<file name> instead of upstream (same checks)
	CacheDir string // "" is pipeline/source's default
	// Keyservers replace pipeline/source's default key servers for signer keys that are
	// not vendored.
	Keyservers []string
	// KeysDir holds reviewed keys trusted like the vendored ones (source.WithKeysDir).
	KeysDir string
	// Sink receives the fetcher's lines (source.WithSink); nil discards them.
	Sink progress.Sink
}

// NewFetcher is pipeline/source's verifying downloader configured by c.
func NewFetcher(c FetchConfig) Fetcher {
	var opts []source.Option
	if c.Sink != nil {
		opts = append(opts, source.WithSink(c.Sink))
	}
	if c.Mirror != "" {
		opts = append(opts, source.WithMirror(c.Mirror))
	}
	if c.CacheDir != "" {
		opts = append(opts, source.WithCacheDir(c.CacheDir))
	}
	if c.KeysDir != "" {
		opts = append(opts, source.WithKeysDir(c.KeysDir))
	}
	if c.Keyservers != nil {
		opts = append(opts, source.WithKeyserver(c.Keyservers...))
	}
	return source.New(opts...)
}
