package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

func init() {
	register(&command{
		name:    "lock",
		summary: "change the lock by hand: lock trust COMPONENT FINGERPRINT adopts a new signer",
		usage:   "trust COMPONENT FINGERPRINT [--lock FILE] [--keyserver URL,...]",
		long: `
trust adopts a new release signer for a component, as a reviewed change: it fetches the key
with that primary fingerprint (from the key servers, or --mirror's <FINGERPRINT>.asc), checks
that its fingerprint is exactly the one given and that every self-signature verifies, writes it
as keys/<FINGERPRINT>.asc beside the lock (pipeline/lock/keys for the default lock), and adds
the fingerprint to the component's pinned signers. check-updates refuses a release signed by
a key the lock does not pin and names this command; run it only after checking the
fingerprint with upstream out of band (their website, release announcement, or a person), and
commit both files in one pull request for review.`,
		flags: func(fs *flag.FlagSet) runFunc {
			lockFile := fs.String("lock", lock.DefaultPath, "lock `file` to change")
			keyserver := fs.String("keyserver", "", "fetch the key from these comma-separated `URLs` (default keyserver.ubuntu.com, then keys.openpgp.org)")
			mirror := fs.String("mirror", "", "fetch the key as `URL`/<FINGERPRINT>.asc instead (when no --keyserver is given)")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) != 3 || args[0] != "trust" {
					return usageErrorf("want: lock trust COMPONENT FINGERPRINT, got %q", args)
				}
				name, fpr := args[1], strings.ToUpper(strings.ReplaceAll(args[2], " ", ""))
				if !lock.IsFingerprint(fpr) {
					return usageErrorf("%q is not a key fingerprint: give all 40 hex digits of the primary key (not a 16-digit key ID)", args[2])
				}
				f := upstream.NewFetcher(upstream.FetchConfig{Mirror: *mirror, Keyservers: splitList(*keyserver)})
				return trustSigner(ctx, stdout, *lockFile, name, fpr, f)
			}
		},
	})
}

func trustSigner(ctx context.Context, stdout io.Writer, lockFile, name, fpr string, f upstream.Fetcher) error {
	l, err := lock.Load(lockFile)
	if err != nil {
		return usageErrorf("loading lock %s (nothing was changed): %v", lockFile, err)
	}
	c, ok := l.Component(name)
	if !ok {
		return usageErrorf("the lock %s has no component %q (it has %s)", lockFile, name, strings.Join(componentNames(l), ", "))
	}
	if c.Signature == nil {
		return usageErrorf("%s is unsigned in %s: add its signature URL to the lock first (check-updates adds it when upstream starts signing)", name, lockFile)
	}
	k, err := f.SignerKey(ctx, fpr)
	if err != nil {
		return fmt.Errorf("key %s (nothing was changed): %w", fpr, err)
	}
	keysDir := lock.KeysDirBeside(lockFile)
	if !k.Vendored {
		if _, err := lock.WriteKeyFile(keysDir, fpr, k.Armored); err != nil {
			return fmt.Errorf("vendoring key %s (the lock is unchanged): %w", fpr, err)
		}
	}
	if !slices.Contains(c.Signature.Fingerprints, fpr) {
		sig := *c.Signature
		sig.Fingerprints = append(append([]string(nil), sig.Fingerprints...), fpr)
		c.Signature = &sig
		l.SetComponent(c)
		if err := l.Write(lockFile); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s now trusts %s (%s), from %s:\n  %s\n  %s\nReview both and commit them in one pull request.\n",
		name, fpr, strings.Join(k.UserIDs, "; "), k.Source, filepath.Join(keysDir, fpr+".asc"), lockFile)
	return nil
}

func componentNames(l *lock.Lock) []string {
	var out []string
	for _, c := range l.Components {
		out = append(out, c.Name)
	}
	return out
}
