package dockerfile

// Names the external tests (package dockerfile_test) need and the program does not.
var WithSourceMirror = withSourceMirror

const Syntax = syntax
