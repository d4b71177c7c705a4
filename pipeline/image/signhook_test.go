package image

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The sign step gets exactly the verified digest, after verification and before any tag
// moves; a signing failure stops the publish at step "sign" with every tag where it was.
func TestPublishSignsBeforeTags(t *testing.T) {
	reg := newInProcessRegistry(t)
	repo := reg.Host + "/nginx-forge"
	old, next := variant(t, "old", "amd64"), variant(t, "new", "amd64")
	tags := []string{"1.26.3", "latest"}
	if _, err := Publish(context.Background(), old, repo, tags, quick()...); err != nil {
		t.Fatal(err)
	}
	var order []string
	verify := WithVerify(func(_ context.Context, ref name.Digest) error {
		order = append(order, "verify "+ref.DigestStr())
		return nil
	})
	keyLost := errors.New("the signing key is gone")
	sign := WithSign(func(_ context.Context, ref name.Digest, _ []remote.Option) error {
		order = append(order, "sign "+ref.DigestStr())
		if got := headDigest(t, repo+":latest"); got != digestOf(t, old) {
			t.Errorf("latest already moved to %s when signing", got)
		}
		return keyLost
	})
	_, err := Publish(context.Background(), next, repo, tags, quick(verify, sign)...)
	var perr *PublishError
	if !errors.As(err, &perr) || perr.Step != StepSign || !errors.Is(err, keyLost) || !strings.Contains(err.Error(), "no tag moved") {
		t.Fatalf("got %v, want a sign-step PublishError saying no tag moved", err)
	}
	d := digestOf(t, next)
	if strings.Join(order, ", ") != "verify "+d+", sign "+d {
		t.Errorf("steps %v, want verify then sign of %s", order, d)
	}
	for _, tag := range tags {
		if got := headDigest(t, repo+":"+tag); got != digestOf(t, old) {
			t.Errorf("tag %s moved to %s after a failed signing", tag, got)
		}
	}
	// And a signing that succeeds lets the tags move.
	ok := WithSign(func(context.Context, name.Digest, []remote.Option) error { return nil })
	if _, err := Publish(context.Background(), next, repo, tags, quick(ok)...); err != nil {
		t.Fatal(err)
	}
	if got := headDigest(t, repo+":latest"); got != d {
		t.Errorf("latest = %s after a signed publish, want %s", got, d)
	}
}
