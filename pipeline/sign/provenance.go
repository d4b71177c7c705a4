package sign

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	prov1 "github.com/in-toto/attestation/go/predicates/provenance/v1"
	ita1 "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

const (
	// builderID names who ran a key-signed build: `ci build --push --sign-key` of this
	// repository, on whatever machine holds the key (the key is the identity a verifier
	// trusts; builder.version says which program it was). Builds in GitHub Actions carry
	// GitHub's own provenance (actions/attest-build-provenance) instead.
	builderID = "https://github.com/nginx-forge/nginx-forge/ci"
	// buildType says how to read the predicate: externalParameters are the engine (dagger or
	// host), the lock (its components and their versions, source_date_epoch, images) and each
	// platform's build flags (platform, cpu, optimize, modules) that together fix the image;
	// the resolvedDependencies are each source a stage compiled (tarball by SHA-256, git
	// source by commit, recorded PGO profile by SHA-256) and each platform's runtime base
	// image by the manifest digest pulled, as a pkg:oci purl. The Dagger engine compiles in
	// the lock's builder image, listed in runDetails.builder.builderDependencies by the
	// digest the engine pulled; the host engine compiles with the machine's own toolchain,
	// which is not listed.
	buildType = "https://github.com/nginx-forge/nginx-forge/ci-build@v1"
)

// Build is what a key-signed push states about how its subject was built.
type Build struct {
	Lock *lock.Lock
	// Engine is the engine that compiled ("dagger", "host").
	Engine string
	// Platforms are the images the subject holds: one for an image, each platform's for an
	// index of them.
	Platforms []PlatformBuild
}

// PlatformBuild is one platform's build: the flags that chose its plan and what it read.
type PlatformBuild struct {
	Platform string // "linux/amd64"
	CPU      string // the -march level built for
	Optimize string
	Modules  []string
	// Sources are the lock inputs the plan's stages compiled (plan Stage.Source.Component:
	// a component, or a recorded profile by its source name).
	Sources []string
	// Base is the runtime image the platform was built on: its manifest as pulled.
	Base Dependency
	// Builder is the image the engine compiled in, as it pulled it; the zero Dependency when
	// the engine used the machine's own toolchain.
	Builder Dependency
}

// Dependency is an image a build read, as its provenance names it: Digest is the manifest
// digest pulled (ALGORITHM:HEX); URI its package URL, the one the SBOM gives the base
// (image.OCIPurl, which the build pipeline applies), or "" for an image read from a file on
// the building machine, whose path means nothing to a verifier: its digest does.
type Dependency struct{ URI, Digest string }

// provenancePredicate is b as an SLSA v1 provenance predicate (predicateSLSAProvenance1), built with
// the in-toto attestation library's types and checked by its Validate.
func provenancePredicate(b Build) (attestation, error) {
	ext, err := structpb.NewStruct(externalParameters(b))
	if err != nil {
		return attestation{}, fmt.Errorf("provenance: %w", err)
	}
	deps, err := resolvedDependencies(b)
	if err != nil {
		return attestation{}, err
	}
	builder := &prov1.Builder{Id: builderID, Version: builderVersion()}
	if builder.BuilderDependencies, err = builderImages(b); err != nil {
		return attestation{}, err
	}
	p := &prov1.Provenance{
		BuildDefinition: &prov1.BuildDefinition{BuildType: buildType, ExternalParameters: ext, ResolvedDependencies: deps},
		RunDetails:      &prov1.RunDetails{Builder: builder},
	}
	if err := p.Validate(); err != nil {
		return attestation{}, fmt.Errorf("provenance: %w", err)
	}
	raw, err := protojson.Marshal(p)
	if err != nil {
		return attestation{}, fmt.Errorf("provenance: %w", err)
	}
	return attestation{PredicateType: predicateSLSAProvenance1, Predicate: raw}, nil
}

// externalParameters are the inputs a person chose: the lock and each platform's flags.
func externalParameters(b Build) map[string]any {
	var comps []any
	for _, c := range b.Lock.Components {
		comps = append(comps, map[string]any{"name": c.Name, "version": c.Version})
	}
	var platforms []any
	for _, p := range b.Platforms {
		var mods []any
		for _, m := range p.Modules {
			mods = append(mods, m)
		}
		platforms = append(platforms, map[string]any{"platform": p.Platform, "cpu": p.CPU, "optimize": p.Optimize, "modules": mods})
	}
	return map[string]any{
		"engine": b.Engine,
		"lock": map[string]any{
			"source_date_epoch": float64(b.Lock.SourceDateEpoch),
			"components":        comps,
			"images":            map[string]any{"builder": b.Lock.Images.Builder.Pinned(), "runtime": b.Lock.Images.Runtime.Pinned()},
		},
		"platforms": platforms,
	}
}

// builderImages are the images the platforms compiled in, each once.
func builderImages(b Build) ([]*ita1.ResourceDescriptor, error) {
	var ds []*ita1.ResourceDescriptor
	var seen []Dependency
	for _, p := range b.Platforms {
		if p.Builder == (Dependency{}) || slices.Contains(seen, p.Builder) {
			continue
		}
		seen = append(seen, p.Builder)
		d, err := imageDescriptor("builder image "+p.Platform, p.Builder)
		if err != nil {
			return nil, fmt.Errorf("provenance: the %s builder image: %w", p.Platform, err)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// resolvedDependencies are the sources the platforms compiled, each once, in the order
// first read, then each platform's runtime base image.
func resolvedDependencies(b Build) ([]*ita1.ResourceDescriptor, error) {
	var deps []*ita1.ResourceDescriptor
	var seen []string
	for _, p := range b.Platforms {
		for _, name := range p.Sources {
			if slices.Contains(seen, name) {
				continue
			}
			seen = append(seen, name)
			c, ok := b.Lock.Input(name)
			if !ok {
				return nil, fmt.Errorf("provenance: the %s build read %q, which the lock does not have", p.Platform, name)
			}
			deps = append(deps, sourceDescriptor(c))
		}
	}
	for _, p := range b.Platforms {
		d, err := imageDescriptor("runtime image "+p.Platform, p.Base)
		if err != nil {
			return nil, fmt.Errorf("provenance: the %s runtime image: %w", p.Platform, err)
		}
		deps = append(deps, d)
	}
	for i, d := range deps {
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("provenance: dependency %d (%s): %w", i, d.GetName(), err)
		}
	}
	return deps, nil
}

// imageDescriptor is the image dep, named what, as SLSA names a dependency.
func imageDescriptor(what string, dep Dependency) (*ita1.ResourceDescriptor, error) {
	algo, hex, ok := strings.Cut(dep.Digest, ":")
	if !ok || hex == "" {
		return nil, fmt.Errorf("%s: the digest %q is not ALGORITHM:HEX", cmp.Or(dep.URI, "the image read from a file"), dep.Digest)
	}
	return &ita1.ResourceDescriptor{Name: what, Uri: dep.URI, Digest: map[string]string{algo: hex}}, nil
}

// sourceDescriptor is c as SLSA names a dependency: a tarball by its URL and SHA-256, a git
// source as git+URL@refs/tags/TAG by its commit.
func sourceDescriptor(c lock.Component) *ita1.ResourceDescriptor {
	if c.Git != nil {
		uri := "git+" + c.Git.Repository
		if c.Git.Tag != "" {
			uri += "@refs/tags/" + c.Git.Tag
		}
		return &ita1.ResourceDescriptor{Name: c.Name, Uri: uri, Digest: map[string]string{"gitCommit": c.Git.Commit}}
	}
	return &ita1.ResourceDescriptor{Name: c.Name, Uri: c.URL, Digest: map[string]string{"sha256": c.SHA256}}
}

// builderVersion is the program that built: its module version and, when Go stamped it,
// its commit.
func builderVersion() map[string]string {
	v := map[string]string{}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v["nginx-forge"] = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v["commit"] = s.Value
		}
	}
	return v
}
