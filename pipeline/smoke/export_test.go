package smoke

// Names the external tests (package smoke_test) need and the program does not.
const ZstdModuleFlag = zstdModuleFlag
