package smoke

// Names the external tests (package smoke_test) need and the program does not.
const ZstdModuleFlag = zstdModuleFlag

// ParseClientArgs is what the client makes of an argv (ClientMain runs it).
var ParseClientArgs = parseClientArgs
