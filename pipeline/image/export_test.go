package image

// Names the external tests (package image_test) need and the program does not.
var WriteLayout = writeLayout
