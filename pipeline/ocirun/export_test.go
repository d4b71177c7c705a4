package ocirun

// Names the external tests (package ocirun_test) need and the program does not.
var WithHostNetwork = withHostNetwork

const DefaultRuncRoot = runcRoot
