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
)

const (
	// unnamedBuilderID is runDetails.builder.id when the build names no builder
	// (Origin.BuilderID ""): a key-signed build outside GitHub Actions with no repository
	// known (no --source-repository, no origin remote). It names the program, nginx-forge's
	// ci (builder.version says which), and no repository: the key is what a verifier trusts.
	unnamedBuilderID = "urn:nginx-forge:ci"
	// buildType says how to read the predicate: externalParameters are the engine (dagger or
	// host), the lock (its components and their versions, source_date_epoch, images), each
	// platform's build flags (platform, cpu, optimize, modules) that together fix the image,
	// and, when known, the source: the repository built and its git ref; the
	// resolvedDependencies are that repository's revision (git+REPOSITORY[@REF] by
	// gitCommit, named "source"), each source a stage compiled (tarball by SHA-256, git
	// source by commit, recorded PGO profile by SHA-256) and each platform's runtime base
	// image by the manifest digest pulled, as a pkg:oci purl. The Dagger engine compiles in
	// the lock's builder image, listed in runDetails.builder.builderDependencies by the
	// digest the engine pulled; the host engine compiles with the machine's own toolchain,
	// which is not listed. It names this schema, the same for every repository that builds
	// with nginx-forge (as GitHub's workflow build type is the same for every workflow).
	buildType = "https://github.com/nginx-forge/nginx-forge/ci-build@v1"
)

// Build is what a key-signed push states about how its subject was built. The caller reads
// it out of the lock and the plans (pipeline/forge), so this package states a build
// without reading locks.
type Build struct {
	// Lock is what the lock fixed for every platform.
	Lock LockParams
	// Engine is the engine that compiled ("dagger", "host").
	Engine string
	// Platforms are the images the subject holds: one for an image, each platform's for an
	// index of them.
	Platforms []PlatformBuild
	// Origin is who ran the build and what repository and revision it built.
	Origin Origin
}

// Origin is where a build ran, as the command read it where it runs (ci): never a constant
// of this package, so a fork's provenance names the fork.
type Origin struct {
	// BuilderID is runDetails.builder.id: in GitHub Actions the workflow that ran
	// (https://github.com/OWNER/REPO/.github/workflows/FILE@REF, as GitHub's own provenance
	// names it), else REPOSITORY/ci; "" is unnamedBuilderID.
	BuilderID string
	// Repository is the https URL of the repository built ("" unknown), Ref the git ref
	// built ("" unknown) and Revision its commit ("" unknown).
	Repository, Ref, Revision string
}

// LockParams are the lock's choices the provenance states as external parameters.
type LockParams struct {
	SourceDateEpoch int64
	// Components are every component the lock pins, by name and version.
	Components []NameVersion
	// BuilderImage and RuntimeImage are the lock's images as pinned (REF@DIGEST).
	BuilderImage, RuntimeImage string
	// BuilderSnapshot is the archive snapshot the builder installs its packages from
	// (lock images.builder.snapshot; "" none).
	BuilderSnapshot string
}

// NameVersion is a lock component as the external parameters name it.
type NameVersion struct{ Name, Version string }

// Source is one input a stage compiled, as the lock pins it: a tarball (URL, SHA256), or a
// git source (GitRepository, GitTag, GitCommit).
type Source struct {
	Name                             string
	URL, SHA256                      string
	GitRepository, GitTag, GitCommit string
}

// PlatformBuild is one platform's build: the flags that chose its plan and what it read.
type PlatformBuild struct {
	Platform string // "linux/amd64"
	CPU      string // the -march level built for
	Optimize string
	Modules  []string
	// Sources are the lock inputs the plan's stages compiled (a component, or a recorded
	// profile), in stage order.
	Sources []Source
	// Base is the runtime image the platform was built on: its manifest as pulled.
	Base Dependency
	// Builder is the image the engine compiled in, as it pulled it; the zero Dependency when
	// the engine used the machine's own toolchain.
	Builder Dependency
	// Toolchain are the builder's installed packages (plan.ToolchainPackages) by name and
	// version, as the engine read them after the build; empty when it could read none.
	Toolchain []NameVersion
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
	builder := &prov1.Builder{Id: cmp.Or(b.Origin.BuilderID, unnamedBuilderID), Version: builderVersion()}
	if builder.BuilderDependencies, err = builderImages(b); err != nil {
		return attestation{}, err
	}
	def := &prov1.BuildDefinition{BuildType: buildType, ExternalParameters: ext, ResolvedDependencies: deps}
	if in := internalParameters(b); in != nil {
		if def.InternalParameters, err = structpb.NewStruct(in); err != nil {
			return attestation{}, fmt.Errorf("provenance: %w", err)
		}
	}
	p := &prov1.Provenance{
		BuildDefinition: def,
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
	ext := map[string]any{
		"engine": b.Engine,
		"lock": map[string]any{
			"source_date_epoch": float64(b.Lock.SourceDateEpoch),
			"components":        comps,
			"images":            lockImages(b.Lock),
		},
		"platforms": platforms,
	}
	if o := b.Origin; o.Repository != "" {
		src := map[string]any{"repository": o.Repository}
		if o.Ref != "" {
			src["ref"] = o.Ref
		}
		ext["source"] = src
	}
	return ext
}

// lockImages are the lock's images as the external parameters state them, with the
// builder's archive snapshot when the lock pins one (only then, so that the records of
// locks without one read as before).
func lockImages(l LockParams) map[string]any {
	im := map[string]any{"builder": l.BuilderImage, "runtime": l.RuntimeImage}
	if l.BuilderSnapshot != "" {
		im["builder_snapshot"] = l.BuilderSnapshot
	}
	return im
}

// internalParameters are what the build's builder chose rather than the person: the
// toolchain each platform's builder installed ({"toolchain": {PLATFORM: {PACKAGE:
// VERSION}}}), which the lock's archive snapshot fixes; nil when no platform recorded one.
// ci rebuild does not compare them (the external parameters it compares pin them).
func internalParameters(b Build) map[string]any {
	tc := map[string]any{}
	for _, p := range b.Platforms {
		if len(p.Toolchain) == 0 {
			continue
		}
		pkgs := map[string]any{}
		for _, nv := range p.Toolchain {
			pkgs[nv.Name] = nv.Version
		}
		tc[p.Platform] = pkgs
	}
	if len(tc) == 0 {
		return nil
	}
	return map[string]any{"toolchain": tc}
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
	if d := originDescriptor(b.Origin); d != nil {
		deps = append(deps, d)
	}
	deps = append(deps, sourceDependencies(b)...)
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

// sourceDependencies are the sources the platforms compiled, each once, in the order first
// read.
func sourceDependencies(b Build) []*ita1.ResourceDescriptor {
	var deps []*ita1.ResourceDescriptor
	var seen []string
	for _, p := range b.Platforms {
		for _, src := range p.Sources {
			if slices.Contains(seen, src.Name) {
				continue
			}
			seen = append(seen, src.Name)
			deps = append(deps, sourceDescriptor(src))
		}
	}
	return deps
}

// originDescriptor is the revision built, as SLSA names a git dependency:
// git+REPOSITORY[@REF] by its gitCommit, or the commit alone when no repository is known;
// nil when the revision is not known.
func originDescriptor(o Origin) *ita1.ResourceDescriptor {
	if o.Revision == "" {
		return nil
	}
	d := &ita1.ResourceDescriptor{Name: "source", Digest: map[string]string{"gitCommit": o.Revision}}
	if o.Repository != "" {
		d.Uri = "git+" + o.Repository
		if o.Ref != "" {
			d.Uri += "@" + o.Ref
		}
	}
	return d
}

// imageDescriptor is the image dep, named what, as SLSA names a dependency.
func imageDescriptor(what string, dep Dependency) (*ita1.ResourceDescriptor, error) {
	algo, hex, ok := strings.Cut(dep.Digest, ":")
	if !ok || hex == "" {
		return nil, fmt.Errorf("%s: the digest %q is not ALGORITHM:HEX", cmp.Or(dep.URI, "the image read from a file"), dep.Digest)
	}
	return &ita1.ResourceDescriptor{Name: what, Uri: dep.URI, Digest: map[string]string{algo: hex}}, nil
}

// sourceDescriptor is src as SLSA names a dependency: a tarball by its URL and SHA-256, a
// git source as git+URL@refs/tags/TAG by its commit.
func sourceDescriptor(src Source) *ita1.ResourceDescriptor {
	if src.GitCommit != "" {
		uri := "git+" + src.GitRepository
		if src.GitTag != "" {
			uri += "@refs/tags/" + src.GitTag
		}
		return &ita1.ResourceDescriptor{Name: src.Name, Uri: uri, Digest: map[string]string{"gitCommit": src.GitCommit}}
	}
	return &ita1.ResourceDescriptor{Name: src.Name, Uri: src.URL, Digest: map[string]string{"sha256": src.SHA256}}
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
