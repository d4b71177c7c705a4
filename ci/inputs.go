package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// inputFlagError is what run reports for a file input that is not a regular file (a named
// pipe, a device, a directory: safeio.OpenInput refuses it at once): the error with the flag
// the file was given to, and whether that makes it a usage error (the file is the flag's
// value itself, refused before the command did anything with it). A file found in a
// directory a flag names (a key in --keys, or beside --lock) is named with that flag.
func inputFlagError(fs *flag.FlagSet, err error) (error, bool) {
	var nr *safeio.NotRegularError
	if !errors.As(err, &nr) {
		return err, false
	}
	exact, dir := "", ""
	fs.VisitAll(func(f *flag.Flag) {
		v := f.Value.String()
		if f.Name == "lock" && v == "" {
			v = lock.DefaultPath // --lock not given: the default lock's keys are beside it
		}
		switch {
		case v == "":
		case filepath.Clean(v) == filepath.Clean(nr.File):
			exact = "--" + f.Name
		case dir == "" && filepath.Clean(v) == filepath.Dir(nr.File):
			dir = "the directory --" + f.Name + " names"
		case dir == "" && f.Name == "lock" && lock.KeysDirBeside(v) == filepath.Dir(nr.File):
			dir = "the keys directory beside --lock"
		}
	})
	switch {
	case exact != "":
		return fmt.Errorf("%w (the file given to %s)", err, exact), true
	case dir != "":
		return fmt.Errorf("%w (in %s)", err, dir), false
	}
	return err, false
}

// causedError is a message with the errors it was made from, for errors.Is and errors.As.
type causedError struct {
	err    error
	causes []error
}

func (e *causedError) Error() string   { return e.err.Error() }
func (e *causedError) Unwrap() []error { return append([]error{e.err}, e.causes...) }

// keepCauses returns err still unwrapping to every error among args: usageErrorf("%v", err)
// prints the cause's text, and run still finds what it is (a file input that is not a
// regular file names its flag).
func keepCauses(err error, args []any) error {
	var causes []error
	for _, a := range args {
		if e, ok := a.(error); ok {
			causes = append(causes, e)
		}
	}
	if len(causes) == 0 {
		return err
	}
	return &causedError{err, causes}
}

// knownSecrets are the credentials this run may hold, for safeio.Redact: the GitHub token (the
// variable --github-token-env names, and GITHUB_TOKEN).
func knownSecrets(fs *flag.FlagSet) []string {
	out := []string{os.Getenv("GITHUB_TOKEN")}
	if f := fs.Lookup("github-token-env"); f != nil && f.Value.String() != "" {
		out = append(out, os.Getenv(f.Value.String()))
	}
	return append(out, dockerConfigSecrets()...)
}

// dockerConfigSecrets are the registry credentials of the Docker config the commands log in
// with ($DOCKER_CONFIG/config.json, else ~/.docker/config.json): each "auth" (base64 of
// user:password), its password, and any password or token field. A registry that echoes
// them gets them redacted.
func dockerConfigSecrets() []string {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(home, ".docker")
	}
	b, err := safeio.ReadInput(filepath.Join(dir, "config.json"), 1<<20)
	if err != nil {
		return nil
	}
	var cfg struct {
		Auths map[string]struct {
			Auth          string `json:"auth"`
			Password      string `json:"password"`
			IdentityToken string `json:"identitytoken"`
			RegistryToken string `json:"registrytoken"`
		} `json:"auths"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return nil
	}
	var out []string
	for _, a := range cfg.Auths {
		out = append(out, a.Auth, a.Password, a.IdentityToken, a.RegistryToken)
		if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
			if _, pw, ok := strings.Cut(string(dec), ":"); ok {
				out = append(out, pw)
			}
		}
	}
	return out
}

// checkExecutable refuses, as a usage error naming flag, a path that is not a regular file
// this user may run (a binary flag: bench's and tune's --nginx, --baseline): a typo or a
// directory costs a usage error at once, not a failed server start.
func checkExecutable(flag, path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return usageErrorf("%s %s: %v (give an nginx executable)", flag, path, err)
	case !fi.Mode().IsRegular():
		return usageErrorf("%s: %v", flag, &safeio.NotRegularError{File: path, Mode: fi.Mode()})
	case unix.Access(path, unix.X_OK) != nil:
		return usageErrorf("%s %s is not executable by this user (mode %s): give an nginx executable", flag, path, fi.Mode().Perm())
	}
	return nil
}

// checkDirFlag refuses, as a usage error naming flag, a path that is not an existing
// directory (an input directory: smoke's --conf-d, check-updates' --keys without --write).
func checkDirFlag(flag, path, what string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return usageErrorf("%s %s: %v (give the directory %s)", flag, path, err, what)
	case !fi.IsDir():
		return usageErrorf("%s %s is not a directory (give the directory %s)", flag, path, what)
	}
	return nil
}
