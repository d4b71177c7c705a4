package main

import (
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// platformsFlag is --platform of ci build and ci pgo-profile: a list of supported platforms,
// each once, parsed into plan.Platform as the flag is read (plan.ParsePlatforms); nothing
// below the command reads a platform from text again.
type platformsFlag []plan.Platform

func (p *platformsFlag) String() string {
	if p == nil {
		return ""
	}
	names := make([]string, len(*p))
	for i, pl := range *p {
		names[i] = pl.String()
	}
	return strings.Join(names, ",")
}

func (p *platformsFlag) Set(s string) error {
	list, err := plan.ParsePlatforms(s)
	if err != nil {
		return err
	}
	*p = list
	return nil
}

// platformFlag is --platform of ci dockerfile: one supported platform (plan.ParsePlatform).
type platformFlag plan.Platform

func (p *platformFlag) String() string {
	if p == nil || *p == (platformFlag{}) {
		return ""
	}
	return plan.Platform(*p).String()
}

func (p *platformFlag) Set(s string) error {
	pl, err := plan.ParsePlatform(s)
	if err != nil {
		return err
	}
	*p = platformFlag(pl)
	return nil
}

// supportedPlatformNames are the platforms builds target, as check-updates hands them to
// pipeline/upstream (a new base image index must cover each).
func supportedPlatformNames() []string {
	var names []string
	for _, p := range plan.Supported() {
		names = append(names, p.String())
	}
	return names
}
