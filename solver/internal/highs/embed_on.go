//go:build highs_embed

package highs

import _ "embed"

// embeddedWasm is the wasm copied to embed/highs.wasm by the Makefile.
//
//go:embed embed/highs.wasm
var embeddedWasm []byte
