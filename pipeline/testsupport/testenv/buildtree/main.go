// Command buildtree builds the whole stack with the host executor and prints the install
// tree's path on its last line of stdout. testenv.BuiltTree runs it in a subprocess so that
// testenv itself imports none of our packages: the lock, source, plan and host packages'
// own tests import testenv, and a test cannot import a package that imports the package
// under test.
//
// Exit status 3 means the host lacks build tools (the message says which packages).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

func main() {
	lockPath := flag.String("lock", "", "lock file")
	mirror := flag.String("mirror", "", "mirror URL serving the lock's files")
	cache := flag.String("cache", host.DefaultCacheDir, "build cache directory (sources in <cache>/sources)")
	flag.Parse()
	logger := log.New(os.Stderr, "", 0)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	l, err := lock.Load(*lockPath)
	if err != nil {
		logger.Fatal(err)
	}
	p, err := plan.New(l)
	if err != nil {
		logger.Fatal(err)
	}
	if err := host.CheckTools(p); err != nil {
		logger.Print(err)
		os.Exit(3)
	}
	// Every note, Detail included, goes to the log: a failed test build shows its downloads.
	notes := progress.SinkFunc(func(e progress.Event) {
		if n, ok := e.(progress.Note); ok {
			logger.Print(n.Text)
		}
	})
	opts := []source.Option{source.WithCacheDir(filepath.Join(*cache, "sources")), source.WithSink(notes), source.WithSourceDateEpoch(l.SourceDateEpoch)}
	if *mirror != "" {
		opts = append(opts, source.WithMirror(*mirror))
	}
	verified, err := source.New(opts...).FetchAll(ctx, l)
	if err != nil {
		logger.Fatal(err)
	}
	paths := map[string]string{}
	for name, v := range verified {
		paths[name] = v.Prepared
	}
	res, err := host.New(host.WithCacheDir(*cache), host.WithProgress(notes)).Run(ctx, p, paths)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		logger.Fatal(err)
	}
	fmt.Println(res.Tree)
}
