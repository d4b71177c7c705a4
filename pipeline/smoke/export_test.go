package smoke

// Names the external tests (package smoke_test) need and the program does not.
var ZstdModuleFlag = moduleFlag("zstd")

// ParseClientArgs is what the client makes of an argv (ClientMain runs it).
var ParseClientArgs = parseClientArgs
