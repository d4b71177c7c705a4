package sign

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	prov1 "github.com/in-toto/attestation/go/predicates/provenance/v1"
	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// LoadPublicKey reads a PEM public key (cosign.pub, or openssl pkey -pubout's) and returns
// a verifier for it, as cosign verify --key reads one. flagName names the flag in errors.
func LoadPublicKey(flagName, path string) (signature.Verifier, error) {
	f, err := safeio.OpenInput(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flagName, path, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flagName, path, err)
	}
	if len(raw) > maxKeyFile {
		return nil, fmt.Errorf("%s %s: more than %d bytes, more than a PEM public key: pass the public key file (cosign.pub)", flagName, path, maxKeyFile)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%s %s is not a PEM public key: pass the public key that verifies the build's signatures (cosign.pub, or openssl pkey -pubout of the key that signed)", flagName, path)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flagName, path, err)
	}
	return v, nil
}

// Recorded is what a verified SLSA provenance says of how its subject was built, read back
// in the terms Build states it (provenancePredicate): what ci rebuild needs to build it again
// and to check that the checkout and the lock are the ones that built it.
type Recorded struct {
	// Engine is the engine that compiled ("dagger", "host").
	Engine string
	// Origin is the repository, ref and revision built, and the builder that ran.
	Origin Origin
	// Platforms are each platform's flags, as recorded.
	Platforms []RecordedPlatform
	// Attestation is the digest of the attestation layer the provenance was read from.
	Attestation string

	external map[string]any
	sources  []*ita1.ResourceDescriptor
}

// RecordedPlatform is one platform's build flags in a provenance.
type RecordedPlatform struct {
	Platform, CPU, Optimize string
	Modules                 []string
}

// ErrNoProvenance: the image carries no SLSA provenance signed by the key given.
var ErrNoProvenance = errors.New("no SLSA provenance signed by this key is attached")

// ReadProvenance reads the SLSA provenance attached to ref (cosign's sha256-<hex>.att) that
// v verifies, checks that its statement is about ref's digest, and returns what it records.
func ReadProvenance(ctx context.Context, ref name.Digest, v signature.Verifier, opts ...remote.Option) (Recorded, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	tag, err := attestationTag(ref)
	if err != nil {
		return Recorded{}, err
	}
	img, err := remote.Image(tag, opts...)
	var terr *transport.Error
	switch {
	case errors.As(err, &terr) && terr.StatusCode == 404:
		return Recorded{}, fmt.Errorf("%s: %w (no attestations at %s)", ref, ErrNoProvenance, tag)
	case err != nil:
		return Recorded{}, fmt.Errorf("reading the attestations of %s (%s): %w", ref, tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return Recorded{}, fmt.Errorf("reading the attestations of %s: %w", ref, err)
	}
	want := map[string]bool{predicateSLSAProvenance1: true}
	for _, d := range m.Layers {
		layer, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return Recorded{}, fmt.Errorf("reading the attestations of %s: %w", ref, err)
		}
		payload, ok := attestedBy(layer, d, want, v)
		if !ok {
			continue
		}
		rec, err := parseProvenanceStatement(ref, payload)
		if err != nil {
			return Recorded{}, err
		}
		rec.Attestation = d.Digest.String()
		return rec, nil
	}
	return Recorded{}, fmt.Errorf("%s: %w (the attestations at %s hold none whose signature this key verifies)", ref, ErrNoProvenance, tag)
}

// parseProvenanceStatement reads a verified in-toto statement: about ref, of SLSA
// provenance v1, of this project's build type.
func parseProvenanceStatement(ref name.Digest, payload []byte) (Recorded, error) {
	bad := func(format string, a ...any) (Recorded, error) {
		return Recorded{}, fmt.Errorf("the provenance of %s: "+format, append([]any{ref}, a...)...)
	}
	var st ita1.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		return bad("not an in-toto statement: %v", err)
	}
	algo, hex, _ := strings.Cut(ref.DigestStr(), ":")
	about := false
	for _, s := range st.GetSubject() {
		if s.GetDigest()[algo] == hex {
			about = true
		}
	}
	if !about {
		return bad("its statement is about another digest (a provenance copied from another image)")
	}
	// The predicate read as the in-toto library's provenance type, as provenancePredicate
	// wrote it.
	raw, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return bad("%v", err)
	}
	var p prov1.Provenance
	if err := protojson.Unmarshal(raw, &p); err != nil {
		return bad("not an SLSA v1 provenance: %v", err)
	}
	def := p.GetBuildDefinition()
	if def.GetBuildType() != buildType {
		return bad("build type %q, not nginx-forge's %q", def.GetBuildType(), buildType)
	}
	rec := Recorded{external: def.GetExternalParameters().AsMap()}
	rec.Origin.BuilderID = p.GetRunDetails().GetBuilder().GetId()
	rec.readDependencies(def.GetResolvedDependencies())
	if err := rec.readParameters(); err != nil {
		return bad("%v", err)
	}
	return rec, nil
}

// readDependencies reads the revision built and the sources compiled out of the resolved
// dependencies (the images' are the build's to read, not a rebuild's to check).
func (rec *Recorded) readDependencies(deps []*ita1.ResourceDescriptor) {
	for _, d := range deps {
		switch {
		case d.GetName() == "source":
			rec.Origin.Revision = d.GetDigest()["gitCommit"]
		case strings.HasPrefix(d.GetName(), "runtime image ") || strings.HasPrefix(d.GetName(), "builder image "):
		default:
			rec.sources = append(rec.sources, d)
		}
	}
}

// readParameters reads the engine, the repository built and each platform's flags out of
// the external parameters.
func (rec *Recorded) readParameters() error {
	ext := rec.external
	rec.Engine, _ = ext["engine"].(string)
	if src, ok := ext["source"].(map[string]any); ok {
		rec.Origin.Repository, _ = src["repository"].(string)
		rec.Origin.Ref, _ = src["ref"].(string)
	}
	plats, _ := ext["platforms"].([]any)
	for _, x := range plats {
		pm, _ := x.(map[string]any)
		var rp RecordedPlatform
		rp.Platform, _ = pm["platform"].(string)
		rp.CPU, _ = pm["cpu"].(string)
		rp.Optimize, _ = pm["optimize"].(string)
		mods, _ := pm["modules"].([]any)
		for _, m := range mods {
			if s, ok := m.(string); ok {
				rp.Modules = append(rp.Modules, s)
			}
		}
		if rp.Platform == "" {
			return errors.New("a platform entry names no platform")
		}
		rec.Platforms = append(rec.Platforms, rp)
	}
	if rec.Engine == "" || len(rec.Platforms) == 0 {
		return errors.New("it records no engine or no platform")
	}
	return nil
}

// Check compares what the provenance recorded with b, the build the same lock and flags
// make here (its images' digests aside, which only the build reads): the engine, the lock's
// components, source date and images, each platform's flags, and every source a stage
// compiled with its digest. The error names the first field that differs.
func (r Recorded) Check(b Build) error {
	want := externalParameters(b)
	delete(want, "source") // the repository built is the provenance's to say, not the checkout's
	got := map[string]any{}
	for k, v := range r.external {
		if k != "source" {
			got[k] = v
		}
	}
	// Both sides go through the provenance's own encoding (structpb, then protojson), so an
	// empty list and a missing one, or a number's type, compare as the record has them.
	wantJSON, err := normalJSON(want)
	if err != nil {
		return err
	}
	gotJSON, err := normalJSON(got)
	if err != nil {
		return err
	}
	if path, w, g, differ := firstJSONDifference("", wantJSON, gotJSON); differ {
		return fmt.Errorf("the provenance records %s = %s, this checkout's lock and flags give %s", path, g, w)
	}
	var wantSources []string
	for _, d := range sourceDependencies(b) {
		wantSources = append(wantSources, describeDependency(d))
	}
	var gotSources []string
	for _, d := range r.sources {
		gotSources = append(gotSources, describeDependency(d))
	}
	if !slices.Equal(wantSources, gotSources) {
		for i := range max(len(wantSources), len(gotSources)) {
			w, g := "(none)", "(none)"
			if i < len(wantSources) {
				w = wantSources[i]
			}
			if i < len(gotSources) {
				g = gotSources[i]
			}
			if w != g {
				return fmt.Errorf("the provenance records source %d as %s, this checkout's lock gives %s", i+1, g, w)
			}
		}
	}
	return nil
}

// describeDependency is a resolved dependency as one comparable line: name, URI, digests.
func describeDependency(d *ita1.ResourceDescriptor) string {
	var ds []string
	for k, v := range d.GetDigest() {
		ds = append(ds, k+":"+v)
	}
	sort.Strings(ds)
	return fmt.Sprintf("%s %s %s", d.GetName(), d.GetUri(), strings.Join(ds, ","))
}

// normalJSON is v encoded as a provenance encodes its parameters (structpb, protojson) and
// read back by encoding/json.
func normalJSON(v map[string]any) (any, error) {
	st, err := structpb.NewStruct(v)
	if err != nil {
		return nil, fmt.Errorf("provenance parameters: %w", err)
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("provenance parameters: %w", err)
	}
	var out any
	return out, json.Unmarshal(raw, &out)
}

// firstJSONDifference walks two normalised JSON values and returns the first path where
// they differ, with each side as JSON.
func firstJSONDifference(path string, want, got any) (string, string, string, bool) {
	if reflect.DeepEqual(want, got) {
		return "", "", "", false
	}
	show := func(v any) string {
		if v == nil {
			return "(nothing)"
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if p, ws, gs, d := firstJSONDifference(joinPath(path, k), w[k], g[k]); d {
				return p, ws, gs, true
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		for i := range w {
			if p, ws, gs, d := firstJSONDifference(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d {
				return p, ws, gs, true
			}
		}
	}
	return path, show(want), show(got), true
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
