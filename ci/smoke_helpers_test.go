package main

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// smokeExpect is what `ci smoke --expect-lock LOCK --modules MODULES` compares a target that
// records nothing with.
func smokeExpect(lockFile, modules string) (smoke.Expect, error) {
	rs, err := forge.SmokeRequest{Address: "127.0.0.1:1", ExpectLock: lockFile, Modules: modules}.Resolve()
	if err != nil {
		return smoke.Expect{}, err
	}
	return rs.Expectations(), nil
}

// imageExpect is what `ci smoke --image` compares img with under those flags.
func imageExpect(img v1.Image, lockFile, modules string) (smoke.Expect, string, error) {
	rs, err := forge.SmokeRequest{Image: "unused", ExpectLock: lockFile, Modules: modules}.Resolve()
	if err != nil {
		return smoke.Expect{}, "", err
	}
	return rs.ImageExpectations(img)
}

// mustPlatforms is --platform's value as the flag parses it, for tests that build the flags
// struct by hand.
func mustPlatforms(s string) platformsFlag {
	var p platformsFlag
	if err := p.Set(s); err != nil {
		panic(err)
	}
	return p
}
