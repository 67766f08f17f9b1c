//go:build !highs_embed

package highs

// embeddedWasm is empty unless built with -tags highs_embed.
var embeddedWasm []byte
