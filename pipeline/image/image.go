// Package image turns the install tree of a build into the runtime image and publishes it:
// one deterministic layer on top of the distroless base, the runtime contract in the
// config (user, entrypoint, ports, stop signal), provenance in OCI annotations and labels,
// an SPDX SBOM attached as an OCI referrer, an OCI layout for --output, and a publish
// sequence that pushes by digest, verifies exactly that digest, and only then moves tags.
//
// Everything that goes into the image is a function of the install tree's content, the
// lock and the options: no clock, no uid, no umask, no directory order. The same inputs
// give the same digest.
package image

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/ocimedia"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// AnnotationPrefix prefixes the per-component annotations and labels
// (dev.nginx-forge.openssl.version, dev.nginx-forge.openssl.sha256, ...).
const AnnotationPrefix = "dev.nginx-forge."

// Standard OCI annotation keys written by Assemble.
const (
	annotationVersion    = "org.opencontainers.image.version"
	annotationSource     = "org.opencontainers.image.source"
	annotationRevision   = "org.opencontainers.image.revision"
	annotationBaseName   = "org.opencontainers.image.base.name"
	annotationBaseDigest = "org.opencontainers.image.base.digest"
	annotationCreated    = "org.opencontainers.image.created"
	annotationTitle      = "org.opencontainers.image.title"
	annotationLicenses   = "org.opencontainers.image.licenses"
)

// Libcrypt is the component name of the statically linked libcrypt (libxcrypt) in
// annotations and in the SBOM, and the directory of its licence under /usr/share/licenses.
const Libcrypt = plan.LibcryptLicense

// WithSource sets org.opencontainers.image.source: the https URL of the repository the
// image is built from (the workflow's repository, --source-repository, or the checkout's
// origin remote; ci decides, once). Empty, the default, leaves the label out: an image
// never names a repository nobody said it came from (GitHub links a package to the
// repository this label names).
func WithSource(repo string) Option { return func(o *options) { o.source = repo } }

// WithRevision sets org.opencontainers.image.revision (the git commit); empty leaves it out.
func WithRevision(rev string) Option { return func(o *options) { o.revision = rev } }

// WithBaseRef names the base image for org.opencontainers.image.base.{name,digest}. A
// reference with "@sha256:..." gives both; without a digest, the digest of the base
// v1.Image itself is used. The default is the lock's runtime image (its pinned digest if
// any). Set it whenever base is not the lock's image (--runtime-image, the test stand-in),
// or the annotations would name the wrong base.
func WithBaseRef(ref string) Option { return func(o *options) { o.baseRef = ref } }

// WithLibcrypt records the version of the builder's libcrypt-dev whose libcrypt.a is
// linked into nginx (annotation dev.nginx-forge.libcrypt.version and an SBOM package).
// Empty (the default) means nginx does not link libcrypt statically.
func WithLibcrypt(version string) Option { return func(o *options) { o.libcrypt = version } }

// WithOptimize records the optimization mode nginx was built with (plan.Optimize: none,
// lto, pgo) as annotation dev.nginx-forge.optimize and in the SBOM's nginx package. Empty
// (the default) records nothing.
func WithOptimize(mode string) Option { return func(o *options) { o.optimize = mode } }

// annotationOptimize is the annotation WithOptimize sets.
const annotationOptimize = AnnotationPrefix + "optimize"

// WithProfile records the PGO profile a pgo build used (annotation dev.nginx-forge.pgo-profile
// and the SBOM's nginx package): "sha256:<hex>" for the lock's recorded profile, or
// ProfileTrained when the build trained its own (and so is not reproducible). Empty (the
// default) records nothing.
func WithProfile(profile string) Option { return func(o *options) { o.profile = profile } }

// annotationProfile is the annotation WithProfile sets.
const annotationProfile = AnnotationPrefix + "pgo-profile"

// AnnotationModules lists the nginx modules compiled in, comma-separated, by the names
// `ci build --modules` takes (WithModules, or the plan's default set): with the component
// versions, what `ci smoke --image` expects of the image without being told (ReadRecord).
const AnnotationModules = AnnotationPrefix + "modules"

// ProfileTrained is WithProfile's value for a profile trained during the build.
const ProfileTrained = "trained-in-build"

// resolve is makeOptions with what the lock decides when no option did: the epoch, the
// version and the base reference.
func resolve(l *lock.Lock, opts []Option) options {
	o := *makeOptions(opts)
	if o.epoch == nil {
		e := l.SourceDateEpoch
		o.epoch = &e
	}
	if o.version == "" {
		if c, ok := l.Component(lock.Nginx); ok {
			o.version = c.Version
		}
	}
	if o.baseRef == "" {
		o.baseRef = l.Images.Runtime.Pinned()
	}
	return o
}

// Assemble puts installTree (the nginx stage's output: usr/sbin/nginx, etc/nginx, ...)
// on base as one layer and writes the runtime config and provenance. See the package
// comment for what is deterministic.
func Assemble(base v1.Image, installTree string, l *lock.Lock, opts ...Option) (v1.Image, error) {
	if l == nil {
		return nil, fmt.Errorf("assembling image: no lock given")
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("assembling image: invalid lock: %w", err)
	}
	o := resolve(l, opts)
	if err := checkTree(installTree); err != nil {
		return nil, err
	}
	created := time.Unix(*o.epoch, 0).UTC()

	baseName, baseDigest, err := baseIdentity(base, o.baseRef)
	if err != nil {
		return nil, err
	}
	img, err := appendInstallTree(base, installTree, created, l, o)
	if err != nil {
		return nil, err
	}
	anns := annotations(l, o, baseName, baseDigest, created)
	img, err = withRuntimeConfig(img, anns, created)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, anns).(v1.Image), nil
}

// appendInstallTree retypes base to OCI and appends installTree as one layer dated created,
// owned as the runtime contract says.
func appendInstallTree(base v1.Image, installTree string, created time.Time, l *lock.Lock, o options) (v1.Image, error) {
	// The runtime contract (plan.Runtime, read here and not copied, so the Dockerfile, the
	// smoke checks and this image cannot disagree) decides who owns what the image writes
	// at run time; the rest of the tree is root's, so nginx cannot rewrite its own config.
	rt := plan.Runtime
	owners := map[string]Owner{}
	for _, d := range rt.WritableDirs {
		owners[d] = Owner{UID: rt.UID(), GID: rt.GID()}
	}
	layer, err := treeLayer(installTree, layerSpec{modTime: created, owners: owners, normalizeModes: true})
	if err != nil {
		return nil, fmt.Errorf("assembling image from %s: %w", installTree, err)
	}

	// Media types: OCI throughout, whatever the base uses. The alternative, Docker schema
	// 2 throughout on a Docker-typed base, cannot carry what this image is: manifest
	// annotations (the provenance below), the SBOM referrer's subject and the OCI layout
	// of --output are OCI features. So a Docker-typed base's manifest, config and layer
	// descriptors are retyped to their OCI equivalents, pointing at the same blobs (base
	// layer digests unchanged). distroless is OCI already and passes through untouched,
	// which keeps its digests where they were. An OCI manifest listing Docker-typed layers
	// is what umoci refuses (issue 13).
	img, err := ocimedia.ToOCI(base)
	if err != nil {
		return nil, fmt.Errorf("base image %s: %w", o.baseRef, err)
	}

	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "nginx-forge: " + describeStack(l, o),
			Comment:   "nginx install tree",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the install tree layer: %w", err)
	}
	return img, nil
}

// withRuntimeConfig writes the runtime contract (user, entrypoint, ports, ...) and anns as
// labels into img's config, dated created.
func withRuntimeConfig(img v1.Image, anns map[string]string, created time.Time) (v1.Image, error) {
	rt := plan.Runtime
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading base image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	// The base's history entries keep their own times: they describe the base.
	c := &cf.Config
	c.User = rt.User
	c.Entrypoint = append([]string(nil), rt.Entrypoint...)
	// The base's Cmd would become arguments to nginx.
	c.Cmd = nil
	c.WorkingDir = rt.WorkingDir
	c.StopSignal = rt.StopSignal
	c.ExposedPorts = map[string]struct{}{}
	for _, p := range rt.Ports {
		c.ExposedPorts[p] = struct{}{}
	}
	c.Labels = map[string]string{}
	for k, v := range anns {
		c.Labels[k] = v
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("writing image config: %w", err)
	}
	return img, nil
}

// checkTree refuses an install tree that breaks the runtime contract before anything is
// assembled, naming what is missing.
func checkTree(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("install tree %q: %w (pass the nginx stage's output directory)", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("install tree %q is not a directory (pass the nginx stage's output directory)", dir)
	}
	bin := filepath.Join(dir, "usr/sbin/nginx")
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("install tree %q has no executable usr/sbin/nginx (is it the nginx stage's output?)", dir)
	}
	for _, d := range append([]string{"etc/nginx"}, plan.Runtime.WritableDirs...) {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			return fmt.Errorf("install tree %q lacks the directory %s, which the runtime contract requires (the nginx stage must create it)", dir, d)
		}
	}
	return nil
}

// baseIdentity returns the base's name (without tag or digest when a digest is known)
// and digest for the annotations.
func baseIdentity(base v1.Image, ref string) (string, string, error) {
	var digest string
	if IsLocal(ref) {
		// A base read from a file has no name others can pull: the annotations record
		// its digest only, and never a path on the building machine.
		d, err := base.Digest()
		if err != nil {
			return "", "", fmt.Errorf("computing base image digest: %w", err)
		}
		return "", d.String(), nil
	}
	nameStr := ref
	if at := strings.LastIndex(ref, "@"); at >= 0 {
		nameStr, digest = ref[:at], ref[at+1:]
		if _, err := v1.NewHash(digest); err != nil {
			return "", "", fmt.Errorf("base image reference %q: bad digest: %w", ref, err)
		}
	}
	if nameStr != "" {
		if _, err := name.ParseReference(nameStr); err != nil {
			return "", "", fmt.Errorf("parsing base image reference %q: %w", ref, err)
		}
	}
	if digest == "" {
		d, err := base.Digest()
		if err != nil {
			return "", "", fmt.Errorf("computing base image digest: %w", err)
		}
		digest = d.String()
	}
	return nameStr, digest, nil
}

func annotations(l *lock.Lock, o options, baseName, baseDigest string, created time.Time) map[string]string {
	a := map[string]string{
		annotationVersion:    o.version,
		annotationBaseDigest: baseDigest,
		annotationCreated:    created.Format(time.RFC3339),
		annotationTitle:      "nginx-forge",
		annotationLicenses:   sbomLicenseExpression(l, o),
	}
	if baseName != "" {
		a[annotationBaseName] = baseName
	}
	if o.source != "" {
		a[annotationSource] = o.source
	}
	if o.revision != "" {
		a[annotationRevision] = o.revision
	}
	// Only what nginx is built from: a library pinned without its module is not in the image.
	for _, c := range builtComponents(l, o) {
		a[AnnotationPrefix+c.Name+".version"] = c.Version
		if c.Git != nil {
			a[AnnotationPrefix+c.Name+".git-commit"] = c.Git.Commit
			a[AnnotationPrefix+c.Name+".git-tree"] = c.Git.Tree
		} else {
			a[AnnotationPrefix+c.Name+".sha256"] = c.SHA256
		}
	}
	if o.libcrypt != "" {
		a[AnnotationPrefix+Libcrypt+".version"] = o.libcrypt
	}
	a[AnnotationModules] = strings.Join(builtModules(l, o), ",")
	if o.optimize != "" {
		a[annotationOptimize] = o.optimize
	}
	if o.profile != "" {
		a[annotationProfile] = o.profile
	}
	return a
}

// describeStack is the history line: "nginx 1.26.3 (openssl 3.5.7, pcre2 10.46, zlib 1.3.1)".
func describeStack(l *lock.Lock, o options) string {
	var parts []string
	nginx := ""
	for _, c := range builtComponents(l, o) {
		if c.Name == lock.Nginx {
			nginx = "nginx " + c.Version
			continue
		}
		parts = append(parts, c.Name+" "+c.Version)
	}
	sort.Strings(parts)
	if o.libcrypt != "" {
		parts = append(parts, "static libcrypt "+o.libcrypt)
	}
	return nginx + " (" + strings.Join(parts, ", ") + ")"
}
