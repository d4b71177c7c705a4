package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

func init() {
	register(&command{
		name:    "lock",
		summary: "change the lock by hand: lock trust COMPONENT FINGERPRINT adopts a new signer",
		usage:   "[flags] trust COMPONENT FINGERPRINT [flags]",
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
				// Flags may also follow the arguments (lock trust openssl FPR --lock x.json).
				args, err := parseInterspersed(fs, args)
				if err != nil {
					return err
				}
				if len(args) != 3 || args[0] != "trust" {
					return usageErrorf("want: lock trust COMPONENT FINGERPRINT, got %q", args)
				}
				name, fpr := args[1], strings.ToUpper(strings.ReplaceAll(args[2], " ", ""))
				if !lock.IsFingerprint(fpr) {
					return usageErrorf("%q is not a key fingerprint: give all 40 hex digits of the primary key (not a 16-digit key ID)", args[2])
				}
				opts := []source.Option{source.WithMirror(*mirror)}
				if ks := splitList(*keyserver); ks != nil {
					opts = append(opts, source.WithKeyserver(ks...))
				}
				return trustSigner(ctx, stdout, *lockFile, name, fpr, source.New(opts...))
			}
		},
	})
}

// parseInterspersed parses the flags that follow the first argument too (fs.Parse stops at
// it), and returns the arguments; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard) // the error is returned, printed once
	var out []string
	for len(args) > 0 {
		if args[0] == "--" {
			return append(out, args[1:]...), nil
		}
		if strings.HasPrefix(args[0], "-") && args[0] != "-" {
			if err := fs.Parse(args); err != nil {
				return nil, usageErrorf("%v (run 'go run ./ci %s --help' for its flags)", err, fs.Name())
			}
			args = fs.Args()
			continue
		}
		out, args = append(out, args[0]), args[1:]
	}
	return out, nil
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
	keyLine, keyChanged, err := vendorKey(lock.KeysDirBeside(lockFile), fpr, k)
	if err != nil {
		return err
	}
	trusted := slices.Contains(c.Signature.Fingerprints, fpr)
	if !trusted {
		sig := *c.Signature
		sig.Fingerprints = append(append([]string(nil), sig.Fingerprints...), fpr)
		c.Signature = &sig
		l.SetComponent(c)
		if err := l.Write(lockFile); err != nil {
			return err
		}
	}
	who := fmt.Sprintf("%s (%s)", fpr, strings.Join(k.UserIDs, "; "))
	switch {
	case !trusted:
		fmt.Fprintf(stdout, "%s now trusts %s, from %s:\n  %s: the fingerprint added to %s's signers\n  %s\nReview them and commit them in one pull request.\n", name, who, k.Source, lockFile, name, keyLine)
	case keyChanged:
		fmt.Fprintf(stdout, "%s already trusts %s: %s is unchanged\n  %s\nReview it and commit it.\n", name, who, lockFile, keyLine)
	default:
		fmt.Fprintf(stdout, "%s already trusts %s: nothing was changed (%s; %s)\n", name, who, lockFile, keyLine)
	}
	return nil
}

// vendorKey writes k as dir/<fpr>.asc unless it is vendored already (built into the
// program, or that file with these bytes), and says which in a line naming the file.
func vendorKey(dir, fpr string, k source.SignerKey) (line string, changed bool, err error) {
	file := filepath.Join(dir, fpr+".asc")
	if k.Vendored {
		return fmt.Sprintf("the key is vendored already (%s): no key file written", k.Source), false, nil
	}
	if old, err := safeio.ReadInput(file, 1<<20); err == nil && bytes.Equal(old, k.Armored) {
		return file + ": the key file, unchanged", false, nil
	}
	if _, err := lock.WriteKeyFile(dir, fpr, k.Armored); err != nil {
		return "", false, fmt.Errorf("vendoring key %s (the lock is unchanged): %w", fpr, err)
	}
	return file + ": the key, written", true, nil
}

func componentNames(l *lock.Lock) []string {
	var out []string
	for _, c := range l.Components {
		out = append(out, c.Name)
	}
	return out
}
