//go:build integration

package image

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
)

// Against Debian's docker-registry (distribution 2.8): push, verify, SBOM through the
// referrers tag fallback (2.8 has no referrers API), tags, pull back.
func TestPublishRealRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	repo := reg.Ref("nginx-forge/nginx")
	l := testLock(t)
	img := variant(t, "a", "amd64")
	sbom, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Publish(context.Background(), img, repo, Tags(l, TagEvent{Latest: false}), quick(
		WithSBOM(sbom, time.Unix(l.SourceDateEpoch, 0)),
		WithVerify(func(ctx context.Context, ref name.Digest) error { _, err := remote.Image(ref); return err }),
	)...)
	if err != nil {
		t.Fatalf("%v\nregistry log:\n%s", err, reg.Log())
	}
	want := digestOf(t, img)
	for _, tag := range Tags(l, TagEvent{Latest: false}) {
		if got := headDigest(t, repo+":"+tag); got != want {
			t.Errorf("tag %s -> %s, want %s", tag, got, want)
		}
	}
	refs, err := remote.Referrers(res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := refs.IndexManifest()
	if len(rm.Manifests) != 1 || rm.Manifests[0].ArtifactType != sbomArtifactType {
		t.Fatalf("referrers of %s: %+v", res.Digest, rm.Manifests)
	}
	// The fallback tag is digest-named ("sha256-<hex>"), so no human tag is involved.
	fallback := repo + ":sha256-" + strings.TrimPrefix(want, "sha256:")
	if got := headDigest(t, fallback); strings.HasPrefix(got, "absent") {
		t.Errorf("referrers fallback tag %s: %s", fallback, got)
	}
	// Publishing the same image again uploads nothing.
	res2, err := Publish(context.Background(), img, repo, []string{"latest"}, quick()...)
	if err != nil || !res2.AlreadyPresent {
		t.Errorf("second publish: %+v %v", res2, err)
	}
}

// faultCase describes one fault in front of the real registry.
type faultCase struct {
	name string
	// arm installs the fault; heal removes it (restarting the registry if needed).
	arm  func(p *registrytest.Proxy, reg *registrytest.Registry)
	heal func(t *testing.T, p *registrytest.Proxy, reg *registrytest.Registry)
	step string
	// opts are added to the publish under the fault.
	opts []Option
}

// Each fault, at each step that talks to the registry, leaves every tag where it was
// with an error naming the step and the registry state; publishing again after the fault
// is gone succeeds.
func TestPublishFaultsRealRegistry(t *testing.T) {
	unset := func(t *testing.T, p *registrytest.Proxy, reg *registrytest.Registry) { p.SetRule(nil) }
	restart := func(t *testing.T, p *registrytest.Proxy, reg *registrytest.Registry) {
		p.SetRule(nil)
		if err := reg.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []faultCase{
		{
			name: "500 on every blob upload from the second on",
			arm: func(p *registrytest.Proxy, reg *registrytest.Registry) {
				p.SetRule(registrytest.FailFrom(2, -1, registrytest.Fail500, registrytest.IsBlobUpload))
			},
			heal: unset, step: StepPush,
		},
		{
			name: "connections reset on blob uploads from the third on",
			arm: func(p *registrytest.Proxy, reg *registrytest.Registry) {
				p.SetRule(registrytest.FailFrom(3, -1, registrytest.Reset, registrytest.IsBlobUpload))
			},
			heal: unset, step: StepPush,
		},
		{
			name: "registry killed between blobs",
			arm: func(p *registrytest.Proxy, reg *registrytest.Registry) {
				// The first blob upload is let through to its final PUT; the next
				// upload request finds the registry dead (the proxy answers 502).
				var committed atomic.Bool // the proxy serves requests concurrently
				p.SetRule(func(r registrytest.Request) registrytest.Action {
					if !registrytest.IsBlobUpload(r) {
						return registrytest.Pass
					}
					if committed.Load() {
						reg.Stop()
					}
					if r.Method == "PUT" {
						committed.Store(true)
					}
					return registrytest.Pass
				})
			},
			heal: restart, step: StepPush,
			// One upload at a time: a registry killed while it writes another blob is
			// left with that blob half-written, which it answers with a 500 ("invalid
			// checksum digest format") ever after, so no retry could succeed. The fault
			// under test is a registry gone between two blobs.
			opts: []Option{withJobs(1)},
		},
		{
			name: "500 on the manifest put",
			arm: func(p *registrytest.Proxy, reg *registrytest.Registry) {
				p.SetRule(registrytest.FailFrom(1, -1, registrytest.Fail500, func(r registrytest.Request) bool {
					return registrytest.IsManifestPut(r) && strings.Contains(r.Path, "/manifests/sha256:")
				}))
			},
			heal: unset, step: StepPush,
		},
		{
			name: "registry killed after the push, before tagging",
			arm: func(p *registrytest.Proxy, reg *registrytest.Registry) {
				p.SetRule(func(r registrytest.Request) registrytest.Action {
					// The first read of a tag is the start of the tag step.
					if r.Method == "GET" && strings.Contains(r.Path, "/manifests/") && !strings.Contains(r.Path, "sha256") {
						reg.Stop()
					}
					return registrytest.Pass
				})
			},
			heal: restart, step: StepTag,
		},
		{
			name: "500 on the second tag's put (the first is put back)",
			arm: func(p *registrytest.Proxy, reg *registrytest.Registry) {
				p.SetRule(registrytest.FailFrom(1, -1, registrytest.Fail500, func(r registrytest.Request) bool {
					return registrytest.IsManifestPut(r) && strings.HasSuffix(r.Path, "/manifests/latest")
				}))
			},
			heal: unset, step: StepTag,
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := registrytest.Start(t)
			proxy := registrytest.NewProxy(t, reg.Host)
			repo := proxy.Host + "/nginx-forge/nginx"
			tags := []string{"1.26.3", "latest"}
			old := variant(t, "old", "amd64")
			if _, err := Publish(context.Background(), old, repo, tags, quick()...); err != nil {
				t.Fatal(err)
			}
			// A new image with bigger layers than the synthetic one, so a push has
			// several blobs to fail between.
			next := variant(t, "new-"+string(rune('a'+i)), "amd64")
			verified := 0
			verify := WithVerify(func(ctx context.Context, ref name.Digest) error { verified++; return nil })

			tc.arm(proxy, reg)
			_, err := Publish(context.Background(), next, repo, tags, quick(append([]Option{verify}, tc.opts...)...)...)
			var perr *PublishError
			if !errors.As(err, &perr) {
				t.Fatalf("publish under fault: got %v, want a *PublishError\nproxy log:\n%s", err, strings.Join(proxy.Log(), "\n"))
			}
			t.Logf("error: %v", err)
			if perr.Step != tc.step {
				t.Errorf("failed at step %q, want %q", perr.Step, tc.step)
			}
			if tc.step == StepTag && strings.Contains(tc.name, "put back") && (len(perr.Restored) != 1 || !strings.Contains(err.Error(), "put back where they were: 1.26.3")) {
				t.Errorf("the first tag was not reported put back: %v", err)
			}
			if !strings.Contains(err.Error(), "registry state:") || len(perr.Moved) != 0 {
				t.Errorf("error does not describe the registry state or reports moved tags: %v", err)
			}
			if tc.step == StepPush && verified != 0 {
				t.Errorf("verification ran %d times although the push failed", verified)
			}
			tc.heal(t, proxy, reg)
			// Every tag is where it was, read directly from the registry.
			for _, tag := range tags {
				if got := headDigest(t, reg.Ref("nginx-forge/nginx:"+tag)); got != digestOf(t, old) {
					t.Errorf("after the fault, tag %s -> %s, want the old %s", tag, got, digestOf(t, old))
				}
			}
			// Retrying after the fault succeeds and moves the tags.
			res, err := Publish(context.Background(), next, repo, tags, quick(verify)...)
			if err != nil {
				t.Fatalf("retry after the fault: %v\nregistry log:\n%s", err, reg.Log())
			}
			for _, tag := range tags {
				if got := headDigest(t, reg.Ref("nginx-forge/nginx:"+tag)); got != digestOf(t, next) {
					t.Errorf("after the retry, tag %s -> %s, want %s", tag, got, digestOf(t, next))
				}
			}
			if _, err := remote.Image(res.Digest); err != nil {
				t.Errorf("pulling %s after the retry: %v", res.Digest, err)
			}
		})
	}
}

// One transient 500 (or reset) is absorbed by the retries: the publish succeeds.
func TestPublishRetriesTransientErrors(t *testing.T) {
	for _, act := range []registrytest.Action{registrytest.Fail500, registrytest.Reset} {
		t.Run(act.String(), func(t *testing.T) {
			reg := registrytest.Start(t)
			proxy := registrytest.NewProxy(t, reg.Host)
			repo := proxy.Host + "/nginx-forge/nginx"
			proxy.SetRule(registrytest.FailFrom(2, 1, act, nil))
			img := variant(t, "a", "amd64")
			if _, err := Publish(context.Background(), img, repo, []string{"latest"}, quick()...); err != nil {
				t.Fatalf("a single transient %s was not retried: %v\nproxy log:\n%s", act, err, strings.Join(proxy.Log(), "\n"))
			}
			faults := 0
			for _, l := range proxy.Log() {
				if strings.HasPrefix(l, act.String()+" ") {
					faults++
				}
			}
			if faults != 1 {
				t.Errorf("%d faults injected, want 1", faults)
			}
			if got := headDigest(t, reg.Ref("nginx-forge/nginx:latest")); got != digestOf(t, img) {
				t.Errorf("latest -> %s", got)
			}
		})
	}
}

// A multi-platform index from per-platform digests, pushed then tagged.
func TestIndexRealRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	repo := reg.Ref("nginx-forge/nginx")
	var refs []string
	for _, arch := range []string{"arm64", "amd64"} {
		res, err := Publish(context.Background(), variant(t, arch, arch), repo, nil, quick()...)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, res.Digest.String())
	}
	res, err := Index(context.Background(), repo, refs, []string{"1.26.3", "latest"}, quick()...)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(mustTag(t, repo+":latest"))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d.String() != res.Digest.DigestStr() {
		t.Errorf("latest -> %s, published %s", d, res.Digest)
	}
	im, _ := idx.IndexManifest()
	var plats []string
	for _, m := range im.Manifests {
		plats = append(plats, m.Platform.String())
	}
	if strings.Join(plats, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("index platforms %v", plats)
	}
	// Argument order does not change the index.
	again, err := BuildIndex(context.Background(), []string{refs[1], refs[0]}, quick()...)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest(); d.String() != res.Digest.DigestStr() {
		t.Errorf("index digest depends on argument order: %s vs %s", d, res.Digest)
	}
	// Two images of one platform, or an index given as a platform image, are refused.
	if _, err := BuildIndex(context.Background(), []string{refs[0], refs[0]}, quick()...); err == nil || !strings.Contains(err.Error(), "both linux/arm64") {
		t.Errorf("duplicate platform: %v", err)
	}
	if _, err := BuildIndex(context.Background(), []string{res.Digest.String()}, quick()...); err == nil || !strings.Contains(err.Error(), "is an index") {
		t.Errorf("index as platform image: %v", err)
	}
	if _, err := BuildIndex(context.Background(), []string{repo + ":latest"}, quick()...); err == nil || !strings.Contains(err.Error(), "REPO@sha256") {
		t.Errorf("tag instead of digest: %v", err)
	}
}

// Tags move all or none: when the third tag's put fails, the tag that existed is put back
// and the one this publish created is deleted again, on Debian's registry (distribution 2.8)
// and on go-containerregistry's.
func TestPublishTagsAllOrNone(t *testing.T) {
	for _, which := range []string{"distribution", "go-containerregistry"} {
		t.Run(which, func(t *testing.T) {
			var host string
			if which == "distribution" {
				host = registrytest.Start(t).Host
			} else {
				host = newInProcessRegistry(t).Host
			}
			proxy := registrytest.NewProxy(t, host)
			repo := proxy.Host + "/nginx-forge/nginx"
			old, next := variant(t, "old", "amd64"), variant(t, "next", "amd64")
			if _, err := Publish(context.Background(), old, repo, []string{"1.26.3", "latest"}, quick()...); err != nil {
				t.Fatal(err)
			}
			proxy.SetRule(registrytest.FailFrom(1, -1, registrytest.Fail500, func(r registrytest.Request) bool {
				return registrytest.IsManifestPut(r) && strings.HasSuffix(r.Path, "/manifests/latest")
			}))
			_, err := Publish(context.Background(), next, repo, []string{"1.26.3", "1.26", "latest"}, quick()...)
			var perr *PublishError
			if !errors.As(err, &perr) || perr.Step != StepTag {
				t.Fatalf("got %v, want a tag-step *PublishError", err)
			}
			t.Logf("error: %v", err)
			if len(perr.Moved) != 0 || !slices.Equal(perr.Restored, []string{"1.26.3"}) || !slices.Equal(perr.Removed, []string{"1.26"}) {
				t.Errorf("Moved %v, Restored %v, Removed %v; want none, [1.26.3], [1.26]", perr.Moved, perr.Restored, perr.Removed)
			}
			// distribution 2.8 deletes no tag alone: the image this publish pushed goes, with it.
			if perr.ImageDeleted != (which == "distribution") {
				t.Errorf("ImageDeleted = %v on %s", perr.ImageDeleted, which)
			}
			proxy.SetRule(nil)
			for _, tag := range []string{"1.26.3", "latest"} {
				if got := headDigest(t, repo+":"+tag); got != digestOf(t, old) {
					t.Errorf("tag %s -> %s, want the old %s", tag, got, digestOf(t, old))
				}
			}
			tag, _ := name.NewTag(repo + ":1.26")
			if _, err := remote.Head(tag); err == nil {
				t.Error("the new tag 1.26 was left behind")
			}
		})
	}
}
