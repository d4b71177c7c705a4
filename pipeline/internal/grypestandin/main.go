// Command grypestandin writes a stand-in grype vulnerability database for the workflow tier
// (pipeline/workflowtest): build.yml's scan job runs anchore/scan-action, which runs the grype
// CLI at the release the action pins (v0.110.0), and that CLI reads its database from
// GRYPE_DB_CACHE_DIR. The real database is downloaded from Anchore's servers, which the tier
// does not reach; this one is built by grype's own database builder, at the same release, from
// planted advisories in the formats of its providers (vunnel's NVD and Debian records), so
// the gate's outcome is decided by what a scenario plants.
//
// It is a module of its own, pinned to that grype release, so that the CLI the tier runs
// (go build github.com/anchore/grype/cmd/grype from this module: its go.mod names it as a
// tool, which keeps the CLI's dependencies in go.sum) and the database it reads come from one
// grype, and grype's dependency tree stays out of nginx-forge's go.mod.
//
// Usage: grypestandin -records DIR -db DIR
//
// -records holds one directory per provider (nvd, debian, ...), each with its records under
// results/ as vunnel writes them. -db is the cache directory to give grype as
// GRYPE_DB_CACHE_DIR: the database goes to DIR/6/vulnerability.db with its import.json, as
// `grype db update` leaves it, built now (grype's age check passes without settings).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/OneOfOne/xxhash"
	_ "github.com/glebarez/sqlite" // the SQLite driver grype's database code opens files with (as cmd/grype imports it)
	"github.com/spf13/afero"

	"github.com/anchore/grype/grype/db"
	"github.com/anchore/grype/grype/db/provider"
	v6 "github.com/anchore/grype/grype/db/v6"
)

func main() {
	records := flag.String("records", "", "the planted records: one `DIR`ectory per provider, each with results/")
	dbRoot := flag.String("db", "", "the grype database cache `DIR`ectory to write (GRYPE_DB_CACHE_DIR)")
	flag.Parse()
	if *records == "" || *dbRoot == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: grypestandin -records DIR -db DIR")
		os.Exit(2)
	}
	if err := build(*records, *dbRoot, time.Now().UTC()); err != nil {
		fmt.Fprintf(os.Stderr, "grypestandin: %v\n", err)
		os.Exit(1)
	}
}

// build writes the database of the providers under records into dbRoot/6, the layout grype
// v6 reads (installation.Config.DBDirectoryPath), with the import metadata whose digest grype
// checks before it trusts the file.
func build(records, dbRoot string, now time.Time) error {
	entries, err := os.ReadDir(records)
	if err != nil {
		return fmt.Errorf("reading the planted records %s: %w", records, err)
	}
	var states provider.States
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		s, err := providerState(filepath.Join(records, e.Name()), now)
		if err != nil {
			return err
		}
		states = append(states, *s)
	}
	if len(states) == 0 {
		return fmt.Errorf("%s holds no provider directory (nvd/results/..., debian/results/...): nothing to build", records)
	}
	dir := filepath.Join(dbRoot, strconv.Itoa(v6.ModelVersion))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The settings of grype's own test database builder (grype/db/v6/testdb in later
	// releases): every CPE part, fix versions inferred from NVD ranges, indexes built.
	if err := db.Build(db.BuildConfig{
		SchemaVersion:       v6.ModelVersion,
		Directory:           dir,
		States:              states,
		Timestamp:           now,
		IncludeCPEParts:     []string{"o", "a", "h"},
		InferNVDFixVersions: true,
		Hydrate:             true,
		BatchSize:           100,
	}); err != nil {
		return fmt.Errorf("building the stand-in database in %s: %w", dir, err)
	}
	if _, err := v6.WriteImportMetadata(afero.NewOsFs(), dir, "nginx-forge workflow tier stand-in"); err != nil {
		return fmt.Errorf("writing %s's import metadata: %w", dir, err)
	}
	return nil
}

// providerState writes what vunnel leaves beside a provider's results (the xxh64 listing and
// metadata.json) and reads it back as grype's builder does: ReadState is the only way to
// fill the state's list of result files.
func providerState(dir string, now time.Time) (*provider.State, error) {
	var listing bytes.Buffer
	err := filepath.WalkDir(filepath.Join(dir, "results"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&listing, "%s  %s\n", xxh64(b), filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the records of %s (want results/...): %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "checksums"), listing.Bytes(), 0o644); err != nil {
		return nil, err
	}
	name := filepath.Base(dir)
	version := "1"
	switch name {
	case "nvd", "github":
		version = "2"
	case "ubuntu":
		version = "3"
	}
	metadata := strings.NewReplacer("{provider}", name, "{timestamp}", now.Format(time.RFC3339),
		"{digest}", xxh64(listing.Bytes()), "{version}", version).Replace(`{
  "provider": "{provider}",
  "urls": ["https://{provider}.invalid"],
  "store": "flat-file",
  "timestamp": "{timestamp}",
  "version": {version},
  "distribution_version": 1,
  "processor": "vunnel@0.54.0",
  "listing": {"digest": "{digest}", "path": "checksums", "algorithm": "xxh64"},
  "schema": {"version": "1.0.3", "url": "https://raw.githubusercontent.com/anchore/vunnel/main/schema/provider-workspace-state/schema-1.0.3.json"},
  "stale": false
}
`)
	if err := os.WriteFile(filepath.Join(dir, "metadata.json"), []byte(metadata), 0o644); err != nil {
		return nil, err
	}
	s, err := provider.ReadState(filepath.Join(dir, "metadata.json"))
	if err != nil {
		return nil, fmt.Errorf("reading back %s/metadata.json: %w", dir, err)
	}
	return s, nil
}

func xxh64(b []byte) string {
	h := xxhash.New64()
	h.Write(b)
	return fmt.Sprintf("%x", h.Sum(nil))
}
