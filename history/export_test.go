package history

// Unexported pieces the external round-trip tests (roundtrip_test.go) use.
var ReadAll = readAll

const GoodLine = goodLine
