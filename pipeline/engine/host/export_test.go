package host

// Names the external tests (package host_test) need and the program does not.
const KeepFailedLogs = keepFailedLogs

var CopyTree = copyTree
